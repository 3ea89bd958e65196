import { ConfigError, loadConfig } from './config/load.ts';
import { PluginLoadError } from './identity/loader.ts';
import { createLogger, startServer } from './server.ts';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`latchkey: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config);
  try {
    const running = await startServer(config, logger);
    const stop = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      running.close().then(
        () => process.exit(0),
        (err) => {
          logger.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  } catch (err) {
    if (err instanceof PluginLoadError) logger.fatal(err.message);
    else logger.fatal({ err }, 'latchkey failed to start');
    process.exit(1);
  }
}

void main();
