import type CliProgress from "cli-progress";
import { lazyModule } from "../common/index.js";
import type { ProgressSnapshot } from "../run/index.js";
import type { CliContext } from "./context.js";

/** The bar's library, loaded when a bar is drawn (a terminal): a run in cron or CI logs lines instead. */
const cliProgress = lazyModule<typeof CliProgress>("cli-progress");

export interface ProgressDisplay {
	update(snapshot: ProgressSnapshot): void;
	/** A short status shown on the bar (e.g. "stopping: in-flight fetches finish"). */
	note(text: string): void;
	stop(): void;
}

/**
 * The terminal progress bar (stderr, TTY only): done/total, rate, ETA, credits, retries, failures.
 * Redrawn at most every 100 ms by cli-progress, so updating it per record costs next to nothing.
 */
/**
 * The bar's ETA: rounded to whole seconds before it is split (cli-progress's own rounds the seconds after
 * the split: 119.6 s read "1m60s"). Unknown (a run that has not finished a target yet) reads "…".
 */
export function etaText(seconds: number): string {
	if (!Number.isFinite(seconds) || seconds < 0) return "…";
	const whole = Math.round(seconds);
	const hours = Math.floor(whole / 3600);
	const minutes = Math.floor((whole % 3600) / 60);
	const rest = whole % 60;
	if (hours > 0) return `${hours}h${String(minutes).padStart(2, "0")}m`;
	if (minutes > 0) return `${minutes}m${String(rest).padStart(2, "0")}s`;
	return `${rest}s`;
}

/**
 * `crawl`: the pages are not known in advance: the bar counts pages done against the pages known so far
 * (seeds and links found, growing as it goes) and shows no ETA (it was `60/1 | ETA 0s`, full from the start).
 */
export function createProgressBar(
	ctx: CliContext,
	jobName: string,
	total: number,
	options: { crawl?: boolean } = {},
): ProgressDisplay {
	const { SingleBar, Presets } = cliProgress();
	const progress = options.crawl ? "{value}/{total} pages known" : "{value}/{total} | {rate}/s | ETA {eta_formatted}";
	const bar = new SingleBar(
		{
			stream: ctx.stderr,
			format: `${jobName} {bar} ${progress}${options.crawl ? " | {rate}/s" : ""} | credits {credits} | retries {retries} | failed {failed}{note}`,
			barCompleteChar: "█",
			barIncompleteChar: "░",
			hideCursor: true,
			clearOnComplete: false,
			etaBuffer: 200,
			fps: 10,
			noTTYOutput: false,
			barsize: 24,
			formatTime: etaText,
		},
		Presets.shades_classic,
	);
	const started = Date.now();
	let known = total;
	bar.start(total, 0, { rate: "0.0", credits: 0, retries: 0, failed: 0, note: "" });
	let based = false;
	let pauseShown = false;
	return {
		update(snapshot) {
			// A resumed run starts where its earlier sessions left off: rate and ETA count this session only.
			if (!based) {
				based = true;
				const before = snapshot.done - snapshot.sessionDone;
				if (before > 0) bar.start(total, before, { rate: "0.0", credits: 0, retries: 0, failed: 0, note: "" });
			}
			// The run's count of targets it knows of grows with a crawl's discoveries: the bar follows it.
			if (snapshot.total !== known) {
				known = snapshot.total;
				bar.setTotal(known);
			}
			const seconds = (Date.now() - started) / 1000;
			const pause = pauseNote(snapshot.paused);
			bar.update(snapshot.done, {
				rate: seconds > 0 ? (snapshot.sessionDone / seconds).toFixed(1) : "0.0",
				credits: Math.round(snapshot.creditsUsed * 100) / 100,
				retries: snapshot.retries,
				failed: snapshot.failed,
				...(pause !== null ? { note: ` | ${pause}` } : pauseShown ? { note: "" } : {}),
			});
			pauseShown = pause !== null;
		},
		note(text) {
			bar.update({ note: ` | ${text.length > 40 ? `${text.slice(0, 39)}…` : text}` });
		},
		stop() {
			bar.stop();
		},
	};
}

/** The pause on the bar, e.g. "paused by the service: 43 s left"; null when sends flow. */
export function pauseNote(paused: ProgressSnapshot["paused"]): string | null {
	if (!paused) return null;
	if (paused.reason === "service_unavailable") return "service unreachable: paused, probing /scraper/health";
	if (paused.reason === "share_wait") return "waiting for a turn on the key (other shards hold its slots)";
	return paused.leftMs !== null
		? `paused by the service: ${Math.ceil(paused.leftMs / 1000)} s left`
		: "paused by the service";
}

/** Non-TTY runs (cron): a progress log line every `intervalMs` instead of a bar. */
export function createProgressLog(
	write: (snapshot: ProgressSnapshot) => void,
	intervalMs = 10_000,
): ProgressDisplay & { latest: ProgressSnapshot | null } {
	let latest: ProgressSnapshot | null = null;
	const timer = setInterval(() => {
		if (latest) write(latest);
	}, intervalMs);
	timer.unref();
	return {
		get latest() {
			return latest;
		},
		update(snapshot) {
			latest = snapshot;
		},
		note() {
			// Non-TTY runs log every event as a line already.
		},
		stop() {
			clearInterval(timer);
		},
	};
}

/** A progress snapshot as log fields: snake_case keys (`credits_used`, `in_flight`), like every other log line. */
export function progressLogFields(snapshot: ProgressSnapshot): Record<string, unknown> {
	const fields: Record<string, unknown> = {};
	for (const [key, value] of Object.entries(snapshot)) {
		if (key === "paused") continue;
		fields[key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`)] = value;
	}
	if (snapshot.paused) {
		fields.paused = snapshot.paused.reason;
		if (snapshot.paused.leftMs !== null) fields.paused_left_ms = Math.round(snapshot.paused.leftMs);
	}
	return fields;
}
