// tests/xds/reference/client.js — grpc-js with @grpc/grpc-js-xds, the
// reference xDS client the issue-18 scenarios also run with
// (tests/xds:reference_client_test drives it). One channel to the target
// for the process's life; commands on stdin, one JSON line of results
// per command on stdout:
//   unary <calls> [<key>=<value>]   calls to TestService/Unary (100 at a time),
//                                   with that metadata ("deadline=<ms>" sets
//                                   the deadline instead: 10 s by default)
//   stats <calls>                   calls to TestService/Stats
//   quit
// Result: {"ok": n, "failed": n, "peers": {"127.0.0.1:p": n}, "codes": {"14": n}, "error": "last message"}
// Usage: GRPC_XDS_BOOTSTRAP_CONFIG='{...}' node client.js <target> <echo_test.proto>
'use strict';
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const readline = require('readline');
require('@grpc/grpc-js-xds').register();

const [target, protoPath] = process.argv.slice(2);
const def = protoLoader.loadSync(protoPath, {keepCase: true});
const pkg = grpc.loadPackageDefinition(def);
const client = new pkg.ringrpc.test.TestService(target, grpc.credentials.createInsecure());

function one(method, md) {
  return new Promise((resolve) => {
    const metadata = new grpc.Metadata();
    let ms = 10000;
    if (md && md[0] === 'deadline') {
      ms = Number(md[1]);
    } else if (md) {
      metadata.set(md[0], md[1]);
    }
    const deadline = new Date(Date.now() + ms);
    const call = client[method]({}, metadata, {deadline}, (err) => {
      resolve({err, peer: call.getPeer()});
    });
  });
}

async function run(method, calls, md) {
  const out = {ok: 0, failed: 0, peers: {}, codes: {}, error: ''};
  for (let done = 0; done < calls;) {
    const batch = Math.min(100, calls - done);
    const results = await Promise.all(Array.from({length: batch}, () => one(method, md)));
    for (const r of results) {
      if (r.err) {
        out.failed++;
        out.codes[r.err.code] = (out.codes[r.err.code] || 0) + 1;
        out.error = r.err.details || String(r.err.message);
      } else {
        out.ok++;
        out.peers[r.peer] = (out.peers[r.peer] || 0) + 1;
      }
    }
    done += batch;
  }
  return out;
}

const lines = readline.createInterface({input: process.stdin});
let queue = Promise.resolve();
lines.on('line', (line) => {
  queue = queue.then(async () => {
    const [cmd, n, kv] = line.trim().split(/\s+/);
    if (cmd === 'quit') process.exit(0);
    const md = kv ? kv.split('=') : null;
    const method = cmd === 'stats' ? 'Stats' : 'Unary';
    const out = await run(method, Number(n), md);
    process.stdout.write(JSON.stringify(out) + '\n');
  });
});
lines.on('close', () => queue.then(() => process.exit(0)));
