#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# One request of a common client to https://NAME/, as a CI job makes it,
# with whatever proxy variables the environment holds (kverify.sh
# "clients"). Prints the client's own output, then
#   RESULT CLIENT NAME rc=N
#
#   kvtools.sh CLIENT NAME CA     CLIENT: curl git python pip node npm
# CA: the test server's certificate (it overrides the CA variables of the
# environment); HOME must be writable (git, pip, npm).
c=$1 name=$2 ca=$3
url=https://$name/
case $c in
curl) curl -sS --max-time 5 --cacert "$ca" -o /dev/null -w 'code=%{http_code}\n' "$url" 2>&1 ;;
git) GIT_SSL_CAINFO=$ca git -c http.lowSpeedTime=5 ls-remote "${url}r.git" 2>&1 ;;
python)
	/usr/bin/python3 - "$url" "$ca" <<'EOF' 2>&1
import ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[2])
try:
    print("code=%d" % urllib.request.urlopen(sys.argv[1], context=ctx, timeout=5).status)
except Exception as e:
    print("error: %s" % e)
    sys.exit(1)
EOF
	;;
pip)
	# one retry: pip says why a fetch failed only when it retries
	PIP_CERT=$ca REQUESTS_CA_BUNDLE=$ca PIP_FIND_LINKS= /usr/bin/python3 -m pip download --no-deps --no-cache-dir \
		--disable-pip-version-check --retries 1 --timeout 5 --index-url "${url}simple/" \
		-d "$HOME/pip" egr-none 2>&1
	;;
node)
	NODE_EXTRA_CA_CERTS=$ca node -e '
require("https").get(process.argv[1], (r) => { r.resume(); console.log("code=" + r.statusCode); })
  .on("error", (e) => { console.log("error: " + e.message); process.exitCode = 1; });' "$url" 2>&1
	;;
npm)
	npm view egr-none --registry "$url" --cafile "$ca" --cache "$HOME/npm" --fetch-retries 0 \
		--fetch-timeout 5000 --no-update-notifier 2>&1
	;;
*)
	echo "unknown client $c"
	exit 2
	;;
esac
echo "RESULT $c $name rc=$?"
