/**
 * The /me and userinfo peer: a bare Express 5 server that answers every request with a constant
 * `res.json`, about the size of Latchkey's /me body. It checks nothing: it is the ceiling of
 * "Express answers JSON" on this machine, what Latchkey's own work is compared against.
 */
import express from 'express';

const port = Number(process.env.PORT);
const user = {
  userid: '6f1c1b0e-7d1e-4a51-9d7c-2a4f0c1e9b11',
  uid: '6f1c1b0e-7d1e-4a51-9d7c-2a4f0c1e9b11',
  sub: '6f1c1b0e-7d1e-4a51-9d7c-2a4f0c1e9b11',
  username: 'bench-user',
  displayName: 'Bench User',
  email: 'bench-user@example.org',
  groups: [],
  client_id: '3b1e9f52-0a51-4c1e-8f0e-3f8f5d0f7a21',
  scope: 'openid profile email',
};

const app = express();
app.get('/me', (_req, res) => {
  res.json(user);
});
app.listen(port, '127.0.0.1');
