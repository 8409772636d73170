#!/usr/bin/env bash
# `bash bench/http/layers.sh <express|fastify> [pairs] [-- contest.js options]`: a developer
# request's CPU timed layer by layer under load, each layer a contest of its own
# (bench/http/contest.js, A's CPU per request over B's; the µs are B's system and user CPU per
# request less A's): Node's promise hooks with a store per request and nothing of miniprof; a
# profile per request with plain calls and no outputs; the page's 10 steps; the comment and
# Server-Timing; the results store. Why: counted, Express's developer request is 1.4x Fastify's
# instructions, timed 2.7x (bench/RESULTS.md Run 35). Needs `npm run build`. Options after `--`
# go to every contest (`--node PATH`, `--connections N`); not `--env-*` or `--flags-*`, which the
# rows set themselves.
set -euo pipefail
cd "$(dirname "$0")/../.."
fw=${1:?usage: bash bench/http/layers.sh <express|fastify> [pairs] [-- contest.js options]}
shift
# `[pairs]` may be left out before `--`.
pairs=3
if [ $# -gt 0 ] && [ "$1" != "--" ]; then pairs=$1; shift; fi
[ "${1:-}" = "--" ] && shift
OFF='\"htmlComment\":false,\"serverTiming\":false'
OPEN="{\"MP_DIRECT\":\"1\",\"MP_OPTS\":\"{$OFF}\"}"
STEPS="{\"MP_OPTS\":\"{$OFF}\"}"
row() {
  local label=$1; shift
  echo "## $fw: $label"
  node bench/http/contest.js "$fw" "$@" "$pairs" 3 --keep 20000 ${EXTRA:+"${EXTRA[@]}"} | grep -E '^B against|^System'
}
EXTRA=("$@")
row 'promise hooks and a store per request (nothing of miniprof)' none none --flags-b '["--import","./bench/http/als-store.js"]'
row 'a profile per request (plain calls, no outputs, no store)' none dev-nostore --env-b "$OPEN"
row 'the 10 steps' dev-nostore dev-nostore --env-a "$OPEN" --env-b "$STEPS"
row 'comment and Server-Timing' dev-nostore dev-nostore --env-a "$STEPS"
row 'the results store' dev-nostore dev
