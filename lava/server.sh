#!/bin/bash
# A LAVA server on this machine, for EXECUTOR=lava's end-to-end test:
# Debian's lava-server (2023.01) with a PostgreSQL cluster of its own,
# gunicorn, lava-publisher (the events that wake the scheduler and the
# worker), lava-scheduler, and a lava-worker (lava-dispatcher) attached to
# it with one QEMU device. No init system runs here, so this script starts
# and stops each process itself, by the ids it records.
#
# usage: lava/server.sh up       start it all (idempotent), register a user,
#                                the device type, the worker and the device,
#                                and a lavacli identity for the user
#        lava/server.sh down     stop what up started
#        lava/server.sh status   which of its processes run
#
# env: LAVA_SERVER_DIR (its state: database, logs, job outputs; default
# build/lava-server), LAVA_SERVER_PORT (HTTP, default 8711; the publisher
# takes the next port, its event socket the one after), LAVA_PG_PORT
# (5433), LAVA_IDENTITY (the lavacli identity written to
# ~/.config/lavacli.yaml, default mmlat-local), LAVA_QEMU_DEVICES (QEMU
# devices on the worker, default one per core: jobs run as many at once).
set -euo pipefail
. "$(dirname "$0")/../bench/lib.sh"

STATE=$(realpath -m "${LAVA_SERVER_DIR:-${BUILD_DIR:-$MMLAT_ROOT/build}/lava-server}")
HTTP_PORT=${LAVA_SERVER_PORT:-8711}
PUBLISHER_PORT=$((HTTP_PORT + 1))
EVENT_PORT=$((HTTP_PORT + 2))
PG_PORT=${LAVA_PG_PORT:-5433}
IDENTITY=${LAVA_IDENTITY:-mmlat-local}
PG_BIN=/usr/lib/postgresql/15/bin
LAVA_USER=mmlat
WORKER=mmlat-worker
DEVICE_COUNT=${LAVA_QEMU_DEVICES:-$(nproc)}
URL=http://127.0.0.1:$HTTP_PORT
DAEMONS="worker scheduler publisher gunicorn"
LAVA_VERSION=$(dpkg-query -W -f '${Version}' lava-server 2>/dev/null || echo none)

[ "$(id -u)" = 0 ] || die "lava/server.sh runs as root (lava-worker runs lava-run, which needs root)"

# as USER CMD...: CMD as USER (setpriv execs it: a recorded $! is CMD's
# own pid).
as() {
	local user=$1
	shift
	setpriv --reuid="$user" --regid="$user" --init-groups env HOME=/ "$@"
}

pid_alive() { [ -f "$STATE/pids/$1" ] && kill -0 "$(cat "$STATE/pids/$1")" 2>/dev/null; }

# The server's settings, for every lava-server process: its database, its
# files under STATE, events on this host only.
lava_env() {
	[ -f "$STATE/db-password" ] || die "no database password in $STATE: run lava/server.sh up"
	printf '%s\n' \
		"DATABASE_URL=postgres://lavaserver:$(cat "$STATE/db-password")@127.0.0.1:$PG_PORT/lavaserver" \
		"ALLOWED_HOSTS=127.0.0.1,localhost" \
		"LAVA_SETTINGS_DEVICES_PATH=$STATE/devices" \
		"LAVA_SETTINGS_MEDIA_ROOT=$STATE/media" \
		"LAVA_YAML_SETTINGS_EVENT_NOTIFICATION=true" \
		"LAVA_SETTINGS_EVENT_SOCKET=tcp://127.0.0.1:$EVENT_PORT" \
		"LAVA_SETTINGS_INTERNAL_EVENT_SOCKET=ipc://$STATE/run/lava.events"
}

# LAVA_AS: the prefix that runs a command as lava-server's user, with
# the server's settings.
set_lava_as() {
	local env=()
	mapfile -t env < <(lava_env)
	LAVA_AS=(setpriv --reuid=lavaserver --regid=lavaserver --init-groups env HOME=/ "${env[@]}")
}

manage() { "${LAVA_AS[@]}" lava-server manage "$@"; }

# start NAME CMD...: CMD in a session of its own, its pid recorded (a
# background job is no group leader here, so setsid execs CMD in place).
start() {
	local name=$1
	shift
	pid_alive "$name" && return
	setsid "$@" > "$STATE/log/$name.out" 2>&1 < /dev/null &
	echo $! > "$STATE/pids/$name"
}

# wait_for WHAT SECONDS CMD...: until CMD succeeds, or die naming WHAT.
wait_for() {
	local what=$1 limit=$2 t0
	shift 2
	t0=$(date +%s)
	until "$@" > /dev/null 2>&1; do
		[ $(($(date +%s) - t0)) -lt "$limit" ] || die "$what did not come up within ${limit}s (logs: $STATE/log/)"
		sleep 0.2
	done
}

start_postgres() {
	if [ ! -f "$STATE/pg/PG_VERSION" ]; then
		install -d -o postgres -g postgres -m 700 "$STATE/pg"
		as postgres "$PG_BIN/initdb" -D "$STATE/pg" -U postgres --auth-local=trust \
			--auth-host=scram-sha-256 > /dev/null
	fi
	if ! as postgres "$PG_BIN/pg_ctl" -D "$STATE/pg" status > /dev/null 2>&1; then
		as postgres "$PG_BIN/pg_ctl" -D "$STATE/pg" -l "$STATE/pg/postgres.log" -w \
			-o "-p $PG_PORT -k $STATE/pg-run -c listen_addresses=127.0.0.1" start > /dev/null
	fi
	[ -f "$STATE/db-password" ] || (umask 077 && head -c 18 /dev/urandom | base64 | tr -d '/+=' > "$STATE/db-password")
	as postgres psql -q -h "$STATE/pg-run" -p "$PG_PORT" -U postgres -v ON_ERROR_STOP=1 \
		-v pw="$(cat "$STATE/db-password")" <<'EOF'
SELECT 'CREATE ROLE lavaserver LOGIN' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'lavaserver')\gexec
ALTER ROLE lavaserver PASSWORD :'pw';
SELECT 'CREATE DATABASE lavaserver OWNER lavaserver ENCODING ''UTF-8'' LC_COLLATE ''C.UTF-8'' LC_CTYPE ''C.UTF-8'' TEMPLATE template0'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'lavaserver')\gexec
EOF
}

start_server() {
	local env=()
	mapfile -t env < <(lava_env)
	set_lava_as
	# the schema of this lava-server version, once
	if [ "$(cat "$STATE/migrated" 2>/dev/null)" != "$LAVA_VERSION" ]; then
		manage migrate --noinput > "$STATE/log/migrate.log"
		echo "$LAVA_VERSION" > "$STATE/migrated"
	fi
	# gunicorn binds as root and serves as lava-server's user, as its
	# systemd unit does
	start gunicorn env "${env[@]}" gunicorn3 lava_server.wsgi --bind "127.0.0.1:$HTTP_PORT" \
		--worker-class eventlet --workers 2 -u lavaserver -g lavaserver --log-file "$STATE/log/gunicorn.log"
	start publisher "${LAVA_AS[@]}" lava-server manage lava-publisher --host 127.0.0.1 --port "$PUBLISHER_PORT" \
		--log-file "$STATE/log/lava-publisher.log" --level INFO
	start scheduler "${LAVA_AS[@]}" lava-server manage lava-scheduler --event-url "tcp://127.0.0.1:$EVENT_PORT" \
		--log-file "$STATE/log/lava-scheduler.log" --level INFO
	wait_for "gunicorn on $URL" 60 curl -sf "$URL/api/v0.2/system/version/"
}

# The user lavacli submits as, its token, and lavacli's identity for it.
register_user() {
	manage users add "$LAVA_USER" --superuser --staff > /dev/null 2>&1 ||
		manage users details "$LAVA_USER" > /dev/null ||
		die "cannot create the LAVA user $LAVA_USER"
	if [ ! -s "$STATE/user-token" ]; then
		(umask 077 && manage tokens add --user "$LAVA_USER" --description mmlat > "$STATE/user-token")
	fi
	lavacli identities add --uri "$URL/RPC2" --username "$LAVA_USER" \
		--token "$(cat "$STATE/user-token")" "$IDENTITY"
}

# The qemu device type, the worker, and DEVICE_COUNT QEMU devices on it
# whose dictionary is lava/devices/mmlat-qemu.jinja2, each tagged with the
# QEMU it runs (qemu-X.Y: what a run pins its jobs to, so that baseline and
# patched run under one QEMU).
register_devices() {
	local token device i qemu_tag
	qemu_tag=qemu-$(qemu-system-x86_64 --version | sed -n '1s/^QEMU emulator version \([0-9]*\.[0-9]*\).*/\1/p')
	install -d -o lavaserver -g lavaserver "$STATE/devices"
	manage device-types add qemu > /dev/null 2>&1 || manage device-types details qemu > /dev/null ||
		die "cannot add the qemu device type"
	manage workers add "$WORKER" --description "mmlat: lava-worker on $(hostname)" > /dev/null 2>&1 || true
	token=$(manage workers details "$WORKER" | sed -n 's/^token *: //p')
	[ -n "$token" ] || die "no token for worker $WORKER"
	(umask 077 && printf '%s' "$token" > "$STATE/worker-token")
	lavacli -i "$IDENTITY" tags add "$qemu_tag" > /dev/null 2>&1 ||
		lavacli -i "$IDENTITY" tags show "$qemu_tag" > /dev/null || die "cannot add the tag $qemu_tag"
	for i in $(seq "$DEVICE_COUNT"); do
		device=$(printf 'mmlat-qemu%02d' "$i")
		install -o lavaserver -g lavaserver -m 644 "$MMLAT_ROOT/lava/devices/mmlat-qemu.jinja2" \
			"$STATE/devices/$device.jinja2"
		manage devices add --device-type qemu --worker "$WORKER" "$device" > /dev/null 2>&1 ||
			manage devices details "$device" > /dev/null || die "cannot add the device $device"
		manage device-tags add "$device" --tags "$qemu_tag" > /dev/null
		manage devices update --health GOOD "$device" > /dev/null
	done
}

start_worker() {
	# lava-run needs root; the worker polls the server every second and
	# hears of a scheduled job at once through the publisher
	start worker lava-worker --name "$WORKER" --url "$URL/" --ws-url "http://127.0.0.1:$PUBLISHER_PORT/ws/" \
		--token-file "$STATE/worker-token" --worker-dir "$STATE/worker" --ping-interval 1 \
		--log-file "$STATE/log/lava-worker.log" --level INFO
	wait_for "worker $WORKER online" 60 sh -c "lavacli -i '$IDENTITY' workers show '$WORKER' | grep -q 'state *: Online'"
}

up() {
	local t0
	t0=$(date +%s.%N)
	for tool in "$PG_BIN/initdb" gunicorn3 lava-server lava-worker lavacli curl; do
		command -v "$tool" > /dev/null ||
			die "$tool not found: apt-get install lava-server lava-dispatcher lavacli postgresql curl"
	done
	mkdir -p "$STATE/pids"
	chmod 755 "$STATE"
	# the database's socket; the server's event socket, media and logs
	install -d -o postgres -g postgres "$STATE/pg-run"
	install -d -o lavaserver -g lavaserver "$STATE/run" "$STATE/media" "$STATE/log"
	start_postgres
	start_server
	# Each registration starts Django anew: done once per set of what
	# is registered, and remembered.
	registered="$LAVA_VERSION $IDENTITY $DEVICE_COUNT"
	if [ "$(cat "$STATE/registered" 2>/dev/null)" != "$registered" ]; then
		register_user
		register_devices
		echo "$registered" > "$STATE/registered"
	fi
	start_worker
	log "LAVA server up in $(echo "$(date +%s.%N) - $t0" | bc | xargs printf '%.1f')s: $URL (lavacli -i $IDENTITY), $DEVICE_COUNT QEMU devices on worker $WORKER; state in ${STATE#"$MMLAT_ROOT"/}"
}

down() {
	local name pid entry pids=()
	for name in $DAEMONS; do
		if pid_alive "$name"; then
			pid=$(cat "$STATE/pids/$name")
			kill -TERM "$pid"
			pids+=("$name:$pid")
		fi
	done
	for entry in "${pids[@]}"; do
		name=${entry%%:*} pid=${entry#*:}
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
		! kill -0 "$pid" 2>/dev/null || { log "$name ($pid) ignored SIGTERM for 10s: killed"; kill -KILL "$pid"; }
	done
	for name in $DAEMONS; do rm -f "$STATE/pids/$name"; done
	if [ -f "$STATE/pg/PG_VERSION" ] && as postgres "$PG_BIN/pg_ctl" -D "$STATE/pg" status > /dev/null 2>&1; then
		as postgres "$PG_BIN/pg_ctl" -D "$STATE/pg" -m fast -w stop > /dev/null
	fi
	log "LAVA server down"
}

status() {
	local name rc=0
	for name in $DAEMONS; do
		if pid_alive "$name"; then echo "$name: running (pid $(cat "$STATE/pids/$name"))"; else echo "$name: stopped"; rc=1; fi
	done
	if [ -f "$STATE/pg/PG_VERSION" ] && as postgres "$PG_BIN/pg_ctl" -D "$STATE/pg" status > /dev/null 2>&1; then
		echo "postgres: running (port $PG_PORT)"
	else
		echo "postgres: stopped"; rc=1
	fi
	return $rc
}

case ${1:-} in
up) up ;;
down) down ;;
status) status ;;
*) die "usage: $0 up | down | status" ;;
esac
