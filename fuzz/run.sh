#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each, one after the other, in one process each, and prints
# per target the executions, coverage, corpus size and crashes. Exits non-zero if any target
# crashed (or timed out, or ran out of memory) — its input is kept under fuzz/artifacts/.
#
# Usage: fuzz/run.sh SECONDS [TARGET...]   (default: all five targets)
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). The seed corpora
# in fuzz/corpus/<target> are read, never written: what a run discovers goes to
# fuzz/corpus-run/<target> (not in git) and is reused by the next run.
set -uo pipefail

SECONDS_PER_TARGET="${1:?usage: fuzz/run.sh SECONDS [TARGET...]}"
shift
HERE="$(cd "$(dirname "$0")" && pwd)"
TARGETS=("$@")
if ((${#TARGETS[@]} == 0)); then
    TARGETS=(wire command filter_plan update extended_json)
fi

cd "$HERE"
# No sanitizer: the targets' code is safe Rust (the C parts, SQLite and zstd, are not
# instrumented by cargo-fuzz's flags anyway); coverage instrumentation and debug assertions
# stay on.
for target in "${TARGETS[@]}"; do
    cargo +nightly fuzz build --sanitizer none --debug-assertions "$target" >/dev/null 2>"$HERE/build.log" ||
        { tail -n 30 "$HERE/build.log" >&2; exit 2; }
done
BIN_DIR="$HERE/target/x86_64-unknown-linux-gnu/release"

failed=0
printf '%-14s %12s %10s %8s %8s %8s %s\n' target runs exec/s cov ft corpus crashes
for target in "${TARGETS[@]}"; do
    work="$HERE/corpus-run/$target"
    artifacts="$HERE/artifacts/$target"
    mkdir -p "$work" "$artifacts"
    log="$HERE/artifacts/$target.log"
    before="$(find "$artifacts" -type f | wc -l)"
    "$BIN_DIR/$target" "$work" "$HERE/corpus/$target" \
        -max_total_time="$SECONDS_PER_TARGET" -timeout=30 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$artifacts/" >"$log" 2>&1
    status=$?
    after="$(find "$artifacts" -type f | wc -l)"
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
    speed="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)"
    last="$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -n 1)"
    cov="$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")"
    ft="$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")"
    corpus="$(sed -n 's/.*corp: \([0-9]*\).*/\1/p' <<<"$last")"
    crashes=$((after - before))
    printf '%-14s %12s %10s %8s %8s %8s %s\n' "$target" "${runs:-?}" "${speed:-?}" "${cov:-?}" \
        "${ft:-?}" "${corpus:-?}" "$crashes"
    if ((status != 0 || crashes > 0)); then
        failed=1
        echo "  $target failed (exit $status); log: $log" >&2
        grep -E 'panicked at|ERROR: libFuzzer|SUMMARY|Test unit written' "$log" | head -n 5 >&2
    fi
done
exit "$failed"
