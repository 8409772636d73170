#!/usr/bin/env bash
# `bash bench/http/layers.sh [--floor] <express|fastify> [pairs] [-- contest.js options]`: a developer
# request's CPU timed layer by layer under load, each layer a contest of its own
# (bench/http/contest.js, A's CPU per request over B's; the µs are B's system and user CPU per
# request less A's): Node's promise hooks with a store per request and nothing of miniprof; a
# profile per request with plain calls and no outputs; the page's 10 steps; the comment and
# Server-Timing; the results store. Why: to see which layer a change moved, and where Express's
# developer request spends more than Fastify's. Needs `npm run build`. Options after `--`
# go to every contest (`--node PATH`, `--connections N`); not `--env-*` or `--flags-*`, which the
# rows set themselves.
# With `--floor`, the parts of the floor of a developer request instead (bench/http/floor.js), each
# against no profiler: what the contract's parts cost at the least, in any implementation.
set -euo pipefail
cd "$(dirname "$0")/../.."
floor=0
if [ "${1:-}" = "--floor" ]; then floor=1; shift; fi
fw=${1:?usage: bash bench/http/layers.sh [--floor] <express|fastify> [pairs] [-- contest.js options]}
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
if [ $floor = 1 ]; then
  row 'a store entered per request, nothing else' none floor --env-b '{"FLOOR_STEPS":"none","FLOOR_OUTPUTS":"0"}'
  row '+ the comment and Server-Timing, made once at start-up' none floor --env-b '{"FLOOR_STEPS":"none"}'
  row '+ 10 steps of two clock reads, not entered (no outputs)' none floor --env-b '{"FLOOR_STEPS":"clock","FLOOR_OUTPUTS":"0"}'
  row 'all but the steps entered (clock reads and outputs)' none floor --env-b '{"FLOOR_STEPS":"clock"}'
  row 'the floor' none floor
  exit 0
fi
row 'a store entered per request, nothing else (nothing of miniprof)' none floor --env-b '{"FLOOR_STEPS":"none","FLOOR_OUTPUTS":"0"}'
row 'a profile per request (plain calls, no outputs, no store)' none dev-nostore --env-b "$OPEN"
row 'the 10 steps' dev-nostore dev-nostore --env-a "$OPEN" --env-b "$STEPS"
row 'comment and Server-Timing' dev-nostore dev-nostore --env-a "$STEPS"
row 'the results store' dev-nostore dev
