#!/usr/bin/env bash
# Throughput of the hot paths (token: client_credentials; me; userinfo) against a real `npm start`
# process on loopback, with wrk (Debian package). A benchmark, not a test: run it by hand.
#   bench/token-paths.sh [sqlite|postgres] [seconds] [connections]
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-sqlite} secs=${2:-10} conns=${3:-32}
port=18900 base="http://127.0.0.1:18900"
command -v wrk >/dev/null || { echo "needs wrk: apt-get install wrk" >&2; exit 2; }
work=$(mktemp -d)
if [ "$kind" = postgres ]; then
  db=latchkey_bench_$$
  psql -q -h 127.0.0.1 -U postgres -d test -c "CREATE DATABASE $db"
  url="postgres://postgres@127.0.0.1:5432/$db"
else
  url="sqlite:$work/bench.db"
fi
PORT=$port HOST=127.0.0.1 LOG_LEVEL=warn DATABASE_URL=$url LATCHKEY_ADMIN_PASSWORD=bench-admin-password \
  LATCHKEY_SECRET=bench-secret-bench-secret-bench-secret-00 node --import tsx src/main.ts > "$work/server.log" 2>&1 &
server=$!
cleanup() {
  kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true
  [ "$kind" = postgres ] && psql -q -h 127.0.0.1 -U postgres -d test -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"
  rm -rf "$work"
}
trap cleanup EXIT
until curl -sf "$base/healthz" >/dev/null; do sleep 0.5; done

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }
admin=$(curl -s "$base/oauth/v20/token" -d grant_type=password -d client_id=admin-cli -d username=admin -d password=bench-admin-password | json 'd["access_token"]')
reg=$(curl -s "$base/graphql" -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
  -d '{"query":"mutation { registerClient(input: { name: \"bench\", redirectUris: [], grantTypes: [PASSWORD, CLIENT_CREDENTIALS], scopes: [\"openid\", \"profile\", \"email\"] }) { client { clientId } clientSecret } }"}')
id=$(echo "$reg" | json 'd["data"]["registerClient"]["client"]["clientId"]')
secret=$(echo "$reg" | json 'd["data"]["registerClient"]["clientSecret"]')
token=$(curl -s "$base/oauth/v20/token" -u "$id:$secret" -d grant_type=password -d username=admin -d password=bench-admin-password | json 'd["access_token"]')

cat > "$work/cc.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.body = "grant_type=client_credentials&client_id=$id&client_secret=$secret"
LUA
echo "machine: $(nproc) cores, $(free -g | awk '/Mem/ {print $2}') GiB; database: $kind; wrk -t2 -c$conns -d${secs}s"
for name in token me userinfo; do
  case $name in
    token) out=$(wrk -t2 -c"$conns" -d"${secs}s" -s "$work/cc.lua" "$base/oauth/v20/token") ;;
    me) out=$(wrk -t2 -c"$conns" -d"${secs}s" -H "Authorization: Bearer $token" "$base/api/oauth/v20/me") ;;
    userinfo) out=$(wrk -t2 -c"$conns" -d"${secs}s" -H "Authorization: Bearer $token" "$base/connect/v10/userinfo") ;;
  esac
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  lat=$(echo "$out" | awk '/Latency/ {print $2}')
  non2xx=$(echo "$out" | awk '/Non-2xx/ {print $5}')
  printf '%-9s %10s req/s   avg latency %8s   non-2xx %s\n' "$name" "$rps" "$lat" "${non2xx:-0}"
done
