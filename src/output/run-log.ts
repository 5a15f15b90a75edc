import pino, { type Logger } from "pino";
import { redactSecrets } from "../common/index.js";
import { type AppendFile, openAppendFile } from "./append-file.js";

/** Lines are batched up to this many UTF-16 code units before one write. */
const BATCH_UNITS = 4096;
/**
 * Or for at most this long: a run that logs little (a shard waiting its turn, a pause, a breaker) is
 * readable in run.log as it goes, and a killed one loses at most this much of it.
 */
const BATCH_MS = 1000;

/**
 * `run.log`: pino JSON lines. Keys are scrubbed from every line (not only from known fields),
 * because an error message echoed by a server could carry one.
 *
 * Written through our own synchronous appender, not pino's destination: sonic-boom's `flushSync`
 * retries a write that fails with anything but EAGAIN every 100 ms forever, so a full disk at the end
 * of a run hung the process in `close`, deaf to SIGTERM. A write that fails here ends the log (its
 * later lines are dropped) and leaves only whole lines; the records' own writes report the failure.
 */
export function createRunLog(
	path: string,
	secrets: ReadonlyArray<string | undefined>,
): { log: Logger; flush(): void; close(options?: { readonly flush?: boolean }): void } {
	// Opened synchronously so `close` can always flush, however short the run.
	const file: AppendFile = openAppendFile(path);
	const known = secrets.filter((secret): secret is string => typeof secret === "string" && secret.length >= 4);
	let batch = "";
	let broken = false;
	let closed = false;
	let timer: NodeJS.Timeout | undefined;
	const flush = () => {
		clearTimeout(timer);
		timer = undefined;
		if (broken || batch.length === 0) return;
		const text = batch;
		batch = "";
		try {
			file.append(text);
		} catch {
			broken = true;
		}
	};
	const stream = {
		write(line: string) {
			if (broken) return;
			batch += known.length ? redactSecrets(line, known) : line;
			if (batch.length >= BATCH_UNITS) flush();
			else if (timer === undefined) {
				timer = setTimeout(flush, BATCH_MS);
				timer.unref();
			}
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
		/** Write what is batched now: a process about to exit at once (a second Ctrl-C) keeps its last second of log. */
		flush,
		/** Write what is batched (unless `flush: false`: the folder is not this run's any more) and close; once. */
		close(options = {}) {
			if (closed) return;
			closed = true;
			if (options.flush !== false) flush();
			clearTimeout(timer);
			batch = "";
			broken = true;
			try {
				file.close();
			} catch {
				// The log's last fdatasync failed (the disk): its lines are in the page cache or lost, as above.
			}
		},
	};
}
