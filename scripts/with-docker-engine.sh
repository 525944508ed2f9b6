#!/usr/bin/env bash
# Run a command (the test suite) with a Docker engine reachable, for the docker backend's tests.
#
# An engine that is already reachable ($DOCKER_HOST, else the default socket) is used as it is. Otherwise,
# as root on Linux, a private dockerd is started for this command only: Debian's docker.io (and mmdebstrap,
# which builds the image) is installed when missing; the engine gets its own data root, exec root, pid file
# and unix socket in a temp dir, and no bridge or iptables rules (containers use the host network). It is
# stopped by its pid when the command ends, whatever the outcome, and its temp dir removed; the image comes
# back from the root file system kafkalab keeps in its cache dir.
#
# KAFKALAB_PRIVATE_DOCKERD=0 never starts one: the docker tests then skip, saying why.
# Usage: scripts/with-docker-engine.sh COMMAND [ARG...]; exits with the command's exit code.
set -uo pipefail

kafkalab=${KAFKALAB:-.venv/bin/kafkalab}
engine_dir=""
dockerd_pid=""

say() { echo "with-docker-engine: $*" >&2; }

engine_reachable() { "$kafkalab" docker status >/dev/null 2>&1; }

may_start_private() {
  [ "${KAFKALAB_PRIVATE_DOCKERD:-1}" != 0 ] && [ "$(uname -s)" = Linux ] && [ "$(id -u)" = 0 ]
}

install_missing() {
  local packages=()
  command -v dockerd >/dev/null || packages+=(docker.io)
  command -v mmdebstrap >/dev/null || packages+=(mmdebstrap)
  [ ${#packages[@]} -eq 0 ] && return 0
  say "installing ${packages[*]} from Debian"
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
}

start_private() {
  # a short path: unix socket paths are limited to 108 bytes
  engine_dir=$(mktemp -d /tmp/kafkalab-dockerd.XXXXXX) || return 1
  dockerd --data-root "$engine_dir/data" --exec-root "$engine_dir/exec" --pidfile "$engine_dir/dockerd.pid" \
    --host "unix://$engine_dir/docker.sock" --bridge=none --iptables=false --ip-masq=false \
    >"$engine_dir/dockerd.log" 2>&1 </dev/null &
  dockerd_pid=$!
  export DOCKER_HOST="unix://$engine_dir/docker.sock"
  for _ in $(seq 120); do
    engine_reachable && { say "private dockerd (pid $dockerd_pid) at $DOCKER_HOST"; return 0; }
    kill -0 "$dockerd_pid" 2>/dev/null || break
    sleep 0.5
  done
  say "the private dockerd did not come up: $(tail -n 2 "$engine_dir/dockerd.log" | tr '\n' ' ')"
  return 1
}

stop_private() {
  if [ -n "$dockerd_pid" ] && kill -0 "$dockerd_pid" 2>/dev/null; then
    kill -TERM "$dockerd_pid"
    for _ in $(seq 60); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$dockerd_pid" 2>/dev/null && kill -KILL "$dockerd_pid"
    wait "$dockerd_pid" 2>/dev/null
    say "private dockerd (pid $dockerd_pid) stopped"
  fi
  if [ -n "$engine_dir" ]; then
    # mounts a hard stop may have left under the engine's dirs, deepest first
    awk -v d="$engine_dir/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | xargs -r -n1 umount -l
    rm -rf "$engine_dir"
  fi
}

if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARG...]" >&2
  exit 2
fi

if ! engine_reachable; then
  if may_start_private; then
    trap stop_private EXIT
    trap 'exit 130' INT TERM
    install_missing && start_private || say "no Docker engine: the docker tests will be skipped"
  else
    say "no Docker engine reachable, and a private one needs root on Linux without KAFKALAB_PRIVATE_DOCKERD=0: the docker tests will be skipped"
  fi
fi

"$@"
