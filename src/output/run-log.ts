import pino, { type Logger } from "pino";
import { redactSecrets } from "../shared/index.js";

/**
 * `run.log`: pino JSON lines. Keys are scrubbed from every line (not only from known fields),
 * because an error message echoed by a server could carry one.
 */
export function createRunLog(path: string, secrets: ReadonlyArray<string | undefined>): { log: Logger; close(): void } {
	// Opened synchronously so `close` can always flush, however short the run; lines are batched up to 4 KB.
	const destination = pino.destination({ dest: path, sync: true, append: true, mkdir: true, minLength: 4096 });
	const known = secrets.filter((secret): secret is string => typeof secret === "string" && secret.length >= 4);
	const stream = {
		write(line: string) {
			destination.write(known.length ? redactSecrets(line, known) : line);
		},
	};
	const log = pino(
		{
			level: "info",
			base: undefined,
			redact: { paths: ["*.api_key", "*.apiKey", "*.key", "*.password", "headers['x-api-key']"], censor: "[redacted]" },
			timestamp: pino.stdTimeFunctions.isoTime,
		},
		stream,
	);
	return {
		log,
		close() {
			destination.flushSync();
			destination.end();
		},
	};
}
