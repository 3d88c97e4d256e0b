package doctor

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// PCI configuration space offsets (PCI Local Bus and PCI Express Base
// specifications).
const (
	pciStatus        = 0x06
	pciStatusCapList = 0x10 // the function has a capability list
	pciCapPointer    = 0x34
	pciCapExpress    = 0x10 // the PCI Express capability's ID
	pcieDevCtl       = 0x08 // Device Control, from the capability's start
	// pciHeaderEnd is where capabilities may start; the kernel shows
	// unprivileged readers only the header, so a config file of this
	// length holds no capability.
	pciHeaderEnd = 0x40
)

// errConfigShort means the config file stops before what was asked: the
// kernel gives only the first 64 bytes to users other than root.
var errConfigShort = errors.New("the configuration space beyond its first 64 bytes is readable only by root")

// maxReadRequest finds the PCI Express capability in a function's
// configuration space (the sysfs config file) and returns Max_Read_
// Request_Size from its Device Control register, in bytes.
func maxReadRequest(config []byte) (int, error) {
	if len(config) < pciHeaderEnd {
		return 0, fmt.Errorf("config space of %d bytes, shorter than its 64-byte header", len(config))
	}
	if binary.LittleEndian.Uint16(config[pciStatus:])&pciStatusCapList == 0 {
		return 0, errors.New("the function lists no capabilities")
	}
	ptr := int(config[pciCapPointer]) &^ 3
	// 48 capabilities of 4 bytes fill the 192 bytes after the header; a
	// longer walk is a loop in a corrupt list.
	for range 48 {
		if ptr == 0 {
			break
		}
		if ptr < pciHeaderEnd {
			return 0, fmt.Errorf("capability pointer %#x points into the header", ptr)
		}
		if ptr+2 > len(config) {
			return 0, errConfigShort
		}
		if config[ptr] == pciCapExpress {
			if ptr+pcieDevCtl+2 > len(config) {
				return 0, errConfigShort
			}
			field := (binary.LittleEndian.Uint16(config[ptr+pcieDevCtl:]) >> 12) & 7
			if field > 5 {
				return 0, fmt.Errorf("Max_Read_Request_Size holds the reserved value %d", field)
			}
			return 128 << field, nil
		}
		ptr = int(config[ptr+1]) &^ 3
	}
	return 0, errors.New("no PCI Express capability")
}
