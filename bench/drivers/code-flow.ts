/**
 * Full code flows with an SSO cookie, as flows/s: each flow is two dependent requests (the authorize
 * GET with the session cookie, answered by a redirect with a code, then the code exchange at the token
 * endpoint), which wrk cannot chain, so this closed loop of `concurrency` workers runs them. Each
 * worker is one browser with its own SSO session. Run by the bench as its own process; prints a
 * Measurement as JSON.
 */
import { keepAliveAgent } from '../http.ts';
import { closedLoop } from '../measurement.ts';
import { authorizeWithSession, exchangeCode, type WebClient } from '../oauth-client.ts';

export interface CodeFlowInput {
  base: string;
  client: WebClient;
  /** Cookie headers of signed-in browsers, one per worker (reused round-robin if fewer). */
  cookies: string[];
  concurrency: number;
  seconds: number;
}

const input = JSON.parse(process.argv[2] ?? '{}') as CodeFlowInput;
const agent = keepAliveAgent(input.concurrency);
const result = await closedLoop(input.concurrency, input.seconds, 'Node driver (node:http)', async (worker) => {
  const code = await authorizeWithSession(input.base, input.client, input.cookies[worker % input.cookies.length]!, agent);
  const tokens = await exchangeCode(input.base, input.client, code, agent);
  if (!tokens.access_token) throw new Error('code exchange without an access_token');
});
agent.destroy();
process.stdout.write(`${JSON.stringify(result)}\n`);
