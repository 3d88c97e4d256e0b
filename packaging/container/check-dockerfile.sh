#!/usr/bin/env bash
# Hold the Dockerfile to the crane-built image: base release, ports,
# entrypoint, command, user, the unprivileged account, the licence file
# and the labels must be those of image.conf. No container engine is needed.
#
#   check-dockerfile.sh [IMAGE_CONFIG_JSON]
#
# Given the config of a built image (test-image.sh passes it), the
# Dockerfile must also set exactly that image's label keys.
set -euo pipefail
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/image.conf
. "$HERE/image.conf"
DOCKERFILE=${DOCKERFILE:-$HERE/Dockerfile}

failures=0
fail() { echo "check-dockerfile: FAIL: $*" >&2; failures=$((failures + 1)); }

# One instruction a line: continuation lines joined, comments and blank
# lines dropped.
instructions=$(sed -e '/^[[:space:]]*#/d' -e '/^[[:space:]]*$/d' "$DOCKERFILE" |
    sed -e ':a' -e '/\\$/{N; s/\\\n[[:space:]]*/ /; ba' -e '}')
# only KEYWORD: the arguments of the one KEYWORD instruction.
only() {
    local lines
    lines=$(grep -E "^$1[[:space:]]" <<<"$instructions" | sed -E "s/^$1[[:space:]]+//") || true
    [ -n "$lines" ] || { fail "no $1 instruction"; return 0; }
    [ "$(wc -l <<<"$lines")" = 1 ] || fail "more than one $1 instruction"
    head -n1 <<<"$lines"
}
# arg NAME: the default of ARG NAME.
arg() { grep -E "^ARG[[:space:]]+$1=" <<<"$instructions" | sed -E "s/^ARG[[:space:]]+$1=//" | head -n1; }
same() { [ "$2" = "$3" ] || fail "$1 is '$2', want '$3'"; }

same FROM "$(only FROM)" "debian:$DEBIAN_RELEASE-slim"
same "ARG WEB_PORT" "$(arg WEB_PORT)" "$WEB_PORT"
same "ARG RESPONDER_PORT" "$(arg RESPONDER_PORT)" "$RESPONDER_PORT"
# The ports come from the ARGs above, so each is set in one line.
# shellcheck disable=SC2016 # the Dockerfile's own variables, unexpanded
same EXPOSE "$(only EXPOSE)" '${WEB_PORT}/tcp ${RESPONDER_PORT}/tcp'
same ENTRYPOINT "$(only ENTRYPOINT | jq -c .)" "$(jq -nc --arg a "$ENTRYPOINT" '[$a]')"
same CMD "$(only CMD | jq -c .)" "$(jq -nc --arg a "$CMD" '[$a]')"
same USER "$(only USER)" "$IMAGE_USER"
grep -Eq "groupadd --system --gid $RUN_AS_UID $RUN_AS_USER( |$)" <<<"$instructions" ||
    fail "no groupadd of $RUN_AS_USER with gid $RUN_AS_UID"
grep -Eq "useradd --system --uid $RUN_AS_UID --gid $RUN_AS_USER .* $RUN_AS_USER( |$)" <<<"$instructions" ||
    fail "no useradd of $RUN_AS_USER with uid $RUN_AS_UID"
grep -Eq "^COPY [^ ]+ $CONFIG_FILE$" <<<"$instructions" || fail "no COPY to $CONFIG_FILE"
grep -Eq "^COPY .* /usr/bin/$" <<<"$instructions" || fail "no COPY of the binaries to /usr/bin/"
grep -Eq "^COPY LICENSE $LICENSE_FILE$" <<<"$instructions" || fail "no COPY of LICENSE to $LICENSE_FILE"

# The labels, as a JSON object: key="value" pairs of the LABEL instruction.
labels=$(only LABEL | grep -oE '[A-Za-z0-9._-]+="[^"]*"' |
    jq -Rn '[inputs | capture("^(?<k>[^=]+)=\"(?<v>.*)\"$") | {(.k): .v}] | add // {}')
want=$(jq -nc \
    --arg title "$LABEL_TITLE" --arg description "$LABEL_DESCRIPTION" \
    --arg source "$LABEL_SOURCE" --arg url "$LABEL_URL" --arg licenses "$LABEL_LICENSES" \
    '{title: $title, description: $description, source: $source, url: $url,
      version: "${VERSION}", revision: "${REVISION}", created: "${CREATED}", licenses: $licenses}
     | with_entries(.key = "org.opencontainers.image." + .key)')
same LABEL "$(jq -Sc . <<<"$labels")" "$(jq -Sc . <<<"$want")"
if [ $# -ge 1 ]; then
    same "LABEL keys (against the built image)" "$(jq -c 'keys' <<<"$labels")" \
        "$(jq -c '.config.Labels | keys' "$1")"
fi

[ "$failures" = 0 ] || { echo "check-dockerfile: $failures difference(s) between $DOCKERFILE and image.conf" >&2; exit 1; }
echo "check-dockerfile: $DOCKERFILE matches image.conf" >&2
