#!/usr/bin/env bash
# The built wheel, installed outside the checkout: armadactl alone (the base install pulls in
# no server packages), then the server (the "server" extra, at requirements.lock's versions)
# against a fresh PostgreSQL database and Redis, every process started from the installed
# package (`armada-server runall`), and one job submitted, run and checked end to end; then
# the executor alone (the "executor" extra, in a venv of its own): no Django and no database
# driver installed, and `armada-executor` starts and checks an executor's file.
#
# Usage: .ci/wheel_e2e.sh  (after `make install`; builds dist/ with `make wheel`)
# Env: PG_URL (postgres://postgres@127.0.0.1:5432), WHEEL_REDIS_URL (redis://127.0.0.1:6379/13)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
PG_URL=${PG_URL:-postgres://postgres@127.0.0.1:5432}
REDIS=${WHEEL_REDIS_URL:-redis://127.0.0.1:6379/13}
DB=armada_wheel_ci
WORK=$(mktemp -d /tmp/armada-wheel.XXXXXX)
PIDFILE=$WORK/runall.pid

cleanup() {
  if [ -f "$PIDFILE" ]; then
    pid=$(cat "$PIDFILE")
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  psql "$PG_URL/postgres" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "== wheel"
make --no-print-directory wheel >/dev/null
WHEEL=$(ls "$REPO"/dist/armada_py-*.whl)
echo "$WHEEL"

echo "== armadactl alone"
python3 -m venv "$WORK/cli"
"$WORK/cli/bin/pip" install --quiet "$WHEEL"
"$WORK/cli/bin/armadactl" --help >/dev/null
for server_package in django celery psycopg uvicorn; do
  if "$WORK/cli/bin/python" -c "import $server_package" 2>/dev/null; then
    echo "the base install pulled in $server_package"; exit 1
  fi
done
echo "armadactl runs; no server packages installed"

echo "== the server, outside the checkout"
python3 -m venv "$WORK/server"
"$WORK/server/bin/pip" install --quiet "$WHEEL[server]" -c "$REPO/requirements.lock"
psql "$PG_URL/postgres" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null
psql "$PG_URL/postgres" -qc "CREATE DATABASE $DB" >/dev/null
redis-cli -u "$REDIS" flushdb >/dev/null
mkdir -p "$WORK/site"
cd "$WORK/site"  # no checkout here: templates, static files and config come from the wheel
export DATABASE_URL="$PG_URL/$DB" REDIS_URL="$REDIS" ARMADA_DEV=1 ARMADA_VAR_DIR="$WORK/site/var"
export HOME="$WORK/home" PATH="$WORK/server/bin:$PATH"
unset ARMADA_CONFIG
mkdir -p "$HOME"
armada-server migrate --verbosity 0
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
GRPC_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
API_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
setsid armada-server runall --port "$PORT" --grpc-port "$GRPC_PORT" --executor-api-port "$API_PORT" \
  >"$WORK/runall.log" 2>&1 &
echo $! >"$PIDFILE"
URL="http://127.0.0.1:$PORT"
for _ in $(seq 240); do
  curl -fsS "$URL/readyz" >/dev/null 2>&1 && break
  sleep 0.5
done
curl -fsS "$URL/readyz" >/dev/null || { echo "not ready"; tail -50 "$WORK/runall.log"; exit 1; }
curl -fsS "$URL/static/vendor/htmx/htmx.min.js" >/dev/null  # htmx, from the wheel
curl -fsS "$URL/login" | grep -q "<form"  # a template, from the wheel

armadactl login --url "$URL" --username admin --password-stdin <"$ARMADA_VAR_DIR/admin-password"
armadactl create queue wheel
cat >"$WORK/job.yaml" <<'EOF'
queue: wheel
jobSetId: from-the-wheel
jobs:
  - podSpec:
      containers:
        - name: main
          image: busybox:latest
          command: ["sh", "-c", "echo hello from the wheel"]
          resources:
            requests: {cpu: 100m, memory: 64Mi}
            limits: {cpu: 100m, memory: 64Mi}
EOF
job=$(armadactl submit "$WORK/job.yaml" | awk '{print $5}')
echo "job $job"
timeout 180 armadactl watch wheel from-the-wheel --exit-if-inactive
state=$(armadactl get job "$job" -o json | python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])')
echo "state: $state"
[ "$state" = "succeeded" ] || { tail -50 "$WORK/runall.log"; exit 1; }
echo "one job ran end to end through the installed package"

echo "== the executor alone"
# What a cluster's machine installs: the "executor" extra only, in a venv of its own, run
# with none of the control plane's environment.
cd "$WORK"
unset DATABASE_URL REDIS_URL ARMADA_DEV ARMADA_VAR_DIR
python3 -m venv "$WORK/executor"
"$WORK/executor/bin/pip" install --quiet "$WHEEL[executor]" -c "$REPO/requirements.lock"
for control_plane_package in django psycopg psycopg2; do
  if "$WORK/executor/bin/python" -c "import $control_plane_package" 2>/dev/null; then
    echo "the executor extra pulled in $control_plane_package"; exit 1
  fi
done
EXECUTOR="$WORK/executor/bin/armada-executor"
"$EXECUTOR" --help >/dev/null
mkdir -p "$WORK/cluster"
(umask 077; printf 'arme_%040d\n' 0 >"$WORK/cluster/cluster-1.key")
cat >"$WORK/cluster/cluster-1.yaml" <<EOF
id: cluster-1
backend: fake
nodes:
  - name: node
    count: 2
    allocatable: {cpu: "4", memory: 16Gi}
api:
  address: 127.0.0.1:$API_PORT
  tokenFile: $WORK/cluster/cluster-1.key
EOF
"$EXECUTOR" --check --config "$WORK/cluster/cluster-1.yaml" | tee "$WORK/check.out"
grep -q "is good (executor cluster-1)" "$WORK/check.out"
# Without its credential the file is refused, naming what is missing.
rm "$WORK/cluster/cluster-1.key"
rc=0
"$EXECUTOR" --check --config "$WORK/cluster/cluster-1.yaml" 2>"$WORK/check.err" || rc=$?
if [ "$rc" != 2 ] || ! grep -q "api.tokenFile" "$WORK/check.err"; then
  echo "a missing token file was not refused (exit $rc)"; cat "$WORK/check.err"; exit 1
fi
echo "armada-executor runs and checks its file; no Django or database driver installed"
