#!/bin/sh
# The release step, run once per release before the processes of deploy/Procfile or the
# systemd units start (and, on an upgrade, before they restart): apply the migrations
# (they only add, so the running release keeps working while they run), collect the
# static files into $ARMADA_VAR_DIR/static, and give Django groups the permissions of
# auth.permissionGroupMapping. Idempotent: running it twice changes nothing more.
#
# It needs the same environment as the processes (DATABASE_URL, SECRET_KEY,
# ARMADA_CONFIG, ARMADA_VAR_DIR, ...) and the installation's armada-server command first
# on PATH (activate its virtualenv), or ARMADA_SERVER=/path/to/venv/bin/armada-server.
set -eu

ARMADA_SERVER=${ARMADA_SERVER:-armada-server}

"$ARMADA_SERVER" migrate --no-input
"$ARMADA_SERVER" collectstatic --no-input --verbosity 0
"$ARMADA_SERVER" seed_permissions
