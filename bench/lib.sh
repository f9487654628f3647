# Shared by the benchmark scripts that start agents and peers side by side (sourced, not run). Before
# sourcing, set `bench_name` (for messages); after it, `work` is a fresh temporary folder and every pid
# appended to `pids` is killed, and `work` removed, when the script exits.
work=$(mktemp -d -t "gpuscope-$bench_name.XXXXXX")
pids=()
bench_cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap bench_cleanup EXIT

# A free loopback port (the kernel's choice).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# Waits up to a minute for URL to answer 2xx.
wait_http() {
  for _ in $(seq 300); do curl -sf "$1" >/dev/null && return 0; sleep 0.2; done
  echo "$bench_name: $1 never answered" >&2
  return 1
}
