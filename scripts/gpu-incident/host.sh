# Sourced by incident.sh and ../gpu-ladder/ladder.sh on the GPU host (they define up and say).
undeb() {  # dpkg -x, or the same by hand where the host has no dpkg (a .deb is an ar archive)
  if command -v dpkg >/dev/null; then dpkg -x "$1" "$2"; return; fi
  python3 - "$1" "$2" <<'PY'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
pos = 8
while pos < len(data):
    name, size = data[pos:pos + 16].decode().strip().rstrip("/"), int(data[pos + 48:pos + 58])
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(data[pos + 60:pos + 60 + size])).extractall(sys.argv[2])
    pos += 60 + size + (size & 1)
PY
}

install_am_templates() {  # unpacked-package-root: Debian's Alertmanager reads every *.tmpl from its /usr/share folder
  # (upstream's binary has them built in). Unpacked elsewhere they are missing and it exits at its first
  # config load: default.tmpl in the first seed-incident run, email.tmpl in the ladder's first lease.
  local dir=/usr/share/prometheus/alertmanager
  mkdir -p "$dir" && cp -n "$1$dir"/*.tmpl "$dir"/
}

wait_healthy() {  # pid label seconds: 0 once $URL/health answers, 1 if the server exits or the time runs out; HEALTHY_AFTER says when
  local i
  for i in $(seq 1 "$3"); do
    kill -0 "$1" 2>/dev/null || { say "$2: vllm exited before /health"; return 1; }
    up "$URL/health" && { HEALTHY_AFTER=$i; return 0; }
    sleep 1
  done
  return 1
}
