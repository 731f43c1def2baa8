// SPDX-License-Identifier: Apache-2.0
// node fetch.js URL [TAG]: node's built-in fetch (undici), which ignores
// HTTP_PROXY/HTTPS_PROXY, for tests/e2e/proxy.sh. Prints ONE JSON line:
// {"tag", "ok", "status", "body", "error", "pid", "comm"} and exits 0.
// Certificates are the suite's self-signed ones: run with
// NODE_TLS_REJECT_UNAUTHORIZED=0.
'use strict';
const fs = require('fs');

const url = process.argv[2];
const tag = process.argv[3] || null;
let comm = null;
try {
  comm = fs.readFileSync('/proc/self/comm', 'utf8').trim();
} catch (e) {
  comm = null;
}
const out = { tag, ok: false, status: null, body: '', error: null, pid: process.pid, comm };
const timer = setTimeout(() => {
  out.error = 'TIMEOUT';
  console.log(JSON.stringify(out));
  process.exit(0);
}, 8000);

fetch(url, { signal: AbortSignal.timeout(7000) })
  .then(async (r) => {
    out.ok = true;
    out.status = r.status;
    out.body = (await r.text()).slice(0, 2000);
  })
  .catch((e) => {
    out.error = String((e && e.cause && (e.cause.code || e.cause.message)) || e);
  })
  .finally(() => {
    clearTimeout(timer);
    console.log(JSON.stringify(out));
    process.exit(0);
  });
