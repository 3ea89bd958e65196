/**
 * The password-grant peer: a bare Express 5 server that verifies one argon2id hash per request.
 * The parameters are Latchkey's own (src/crypto/passwords.ts: argon2id, 19 MiB, t=2, p=1): keep them
 * in step, since the verify costs almost all of a password grant's time.
 */
import { hash, verify } from '@node-rs/argon2';
import express from 'express';

const port = Number(process.env.PORT);
const password = process.env.PEER_PASSWORD ?? '';
// algorithm 2 is Argon2id (the package's const enum cannot be imported under verbatimModuleSyntax).
const stored = await hash(password, { algorithm: 2, memoryCost: 19456, timeCost: 2, parallelism: 1 });

const app = express();
app.post('/verify', express.urlencoded({ extended: false }), async (req, res) => {
  const body = req.body as Record<string, string | undefined>;
  const ok = await verify(stored, body.password ?? '').catch(() => false);
  res.status(ok ? 200 : 401).json({ ok });
});
app.get('/healthz', (_req, res) => {
  res.json({ ok: true });
});
app.listen(port, '127.0.0.1');
