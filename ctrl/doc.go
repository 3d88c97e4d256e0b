// Package ctrl is the TCP control channel between rdmarun (the client) and a
// responder (rdmarun serve, and the responder inside rdmarun_exporter). The
// client pushes the whole test spec, both ends swap RDMA endpoint info, they
// start on a barrier and the responder sends its results back. This package
// is only the transport and the handshake: payloads are JSON values the
// callers choose, so it does not depend on the verbs core.
//
// # Frames
//
// Every message is one frame: a 12-byte big-endian header followed by a JSON
// payload.
//
//	magic   4 bytes  "RDMR"
//	version uint16   control protocol version (Version)
//	kind    uint16   message kind (Kind)
//	length  uint32   payload length in bytes
//
// The reader checks the magic, version, kind and length before it allocates
// anything, so a peer that declares a 4 GiB payload costs 12 bytes of reading,
// not 4 GiB of memory; the limit is Options.MaxPayload (1 MiB by default).
// A wrong magic usually means something else answered on the port (an HTTP
// server, or a TLS end talking to a plain one), and the error says which when
// it can tell. The header layout, the numbers of KindHello and KindError and
// the shape of their payloads stay the same in every protocol version, so two
// ends of different releases can still tell each other why they cannot talk.
//
// Kinds may be added within a version (the relay kinds were): a build
// that meets a kind it does not know reads the frame whole and returns an
// error matching ErrUnknownKind with the stream still in step, so a
// responder can answer a newer client's request with an error frame that
// names its own version rather than drop the connection.
//
// Every read and write has a deadline: the context's if it has one, else
// Options.Timeout (10 s by default). A dead or silent peer therefore ends a
// test with an error that names what was awaited, never with a hang.
//
// # Handshake
//
//	client -> hello      {version, auth: has a token}
//	server -> hello      {version, auth}         or error (version, token setup)
//	server -> challenge  {nonce Ns}              only with a token
//	client -> auth       {nonce Nc, mac: HMAC(token, Ns || Nc || "rdmarun-ctrl-v1")}
//	server -> auth-ok    {mac: HMAC(token, Nc || Ns || "rdmarun-ctrl-v1")}   or error
//
// Both versions must be equal: there is no downgrade, so both ends need the
// same rdmarun release line. A token on one end only is refused by whichever
// end notices first, naming the end that lacks it. With tokens on both ends the
// client proves it knows the token and the responder proves it back (the MAC
// over the reversed nonce order), so a client also refuses a responder with
// another token, or an impostor that accepts anything.
//
// Why challenge-response and not a token in the hello: the rkeys sent later
// over this channel are secrets (anyone who has one, and can reach the
// fabric, can read or write the registered memory), and so is the token that
// gates them. The token never crosses the wire; each end draws a fresh 32-byte
// nonce from crypto/rand for every connection, so a recorded exchange cannot
// be replayed. The token authenticates but does not encrypt: on an untrusted
// network run the channel over TLS (TLSConfig, Listen, Dial) so the endpoint
// info, rkeys included, cannot be read or relayed by a man in the middle.
package ctrl
