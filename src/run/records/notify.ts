import { createHmac } from "node:crypto";
import { request } from "undici";
import { errorMessage, sleep as realSleep, redactSecrets, type Sleep } from "../../common/index.js";
import type { RunSummary } from "../../output/index.js";

export const NOTIFY_EVENTS = ["completed", "failed", "stopped"] as const;
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

export interface NotifySpec {
	readonly url: string;
	/** HMAC-SHA256 key of the `X-Scrapejob-Signature` header; none: the header is left out. */
	readonly secret?: string;
	/** Which endings are sent. @default ["completed", "failed", "stopped"] */
	readonly on?: readonly NotifyEvent[];
	/** `json` (the summary) or `slack` (an incoming webhook's `{text}`). @default json, or slack for hooks.slack.com */
	readonly format?: "json" | "slack";
}

/** How a run ended, as notifications name it: every target ok, some failed (or its contract broken), or stopped early. */
export function runEvent(summary: RunSummary): NotifyEvent {
	if (!summary.complete) return "stopped";
	// A run that broke its data contract is complete, and not what its receivers may publish: failed.
	if (summary.contract?.passed === false) return "failed";
	return summary.targets.by_status.failed > 0 ? "failed" : "completed";
}

/** `sha256=<hex HMAC-SHA256 of the body under the secret>`: what a receiver recomputes to trust the POST. */
export function signature(body: string, secret: string): string {
	return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

function slackText(summary: RunSummary, event: NotifyEvent, runDir: string): string {
	const s = summary.targets.by_status;
	const mark = event === "completed" ? "✅" : event === "failed" ? "⚠️" : "🛑";
	const stop = summary.stopped_reason ? ` — stopped: ${summary.stopped_reason}` : "";
	const breakers = (summary.breakers ?? [])
		.map(
			(breaker) =>
				`\nbreaker open: ${breaker.domain} (${breaker.reason}); ${breaker.parked} parked, ${breaker.credits_saved} credits saved`,
		)
		.join("");
	return `${mark} scrapejob ${summary.job} ${summary.run_id}: ${s.ok} ok, ${s.failed} failed of ${summary.targets.total ?? "?"}; ${summary.credits.used} credits${stop}${breakers}\n${runDir}`;
}

/**
 * POST the run's summary when it ends (`notify:` / `--notify`), signed, retried with backoff for a
 * bounded time (3 attempts, 10 s each at most). Never throws: a failed notification is reported to the
 * caller's `warn` and changes nothing about the run or its exit code.
 */
export async function notifyRunEnd(
	spec: NotifySpec,
	summary: RunSummary,
	runDir: string,
	options: { warn(message: string): void; sleep?: Sleep; attempts?: number },
): Promise<boolean> {
	const event = runEvent(summary);
	if (spec.on && !spec.on.includes(event)) return false;
	const slack =
		spec.format === "slack" || (spec.format === undefined && /^https:\/\/hooks\.slack\.com\//.test(spec.url));
	const body = JSON.stringify(
		slack ? { text: slackText(summary, event, runDir) } : { event, run_dir: runDir, ...summary },
	);
	const headers: Record<string, string> = { "content-type": "application/json", "x-scrapejob-event": event };
	if (spec.secret) headers["x-scrapejob-signature"] = signature(body, spec.secret);
	const attempts = options.attempts ?? 3;
	const wait = options.sleep ?? realSleep;
	let last = "";
	for (let attempt = 1; attempt <= attempts; attempt += 1) {
		try {
			const response = await request(spec.url, {
				method: "POST",
				headers,
				body,
				headersTimeout: 10_000,
				bodyTimeout: 10_000,
				signal: AbortSignal.timeout(10_000),
			});
			await response.body.dump();
			if (response.statusCode >= 200 && response.statusCode < 300) return true;
			last = `answered ${response.statusCode}`;
			// A 4xx other than 408/429 will not change on a retry.
			if (response.statusCode < 500 && response.statusCode !== 408 && response.statusCode !== 429) break;
		} catch (error) {
			last = errorMessage(error);
		}
		if (attempt < attempts) await wait(1000 * 2 ** (attempt - 1));
	}
	options.warn(
		`notification to ${redactSecrets(originOf(spec.url), [spec.secret])} failed (${redactSecrets(last, [spec.secret])}); the run's outcome is unchanged`,
	);
	return false;
}

/** Only scheme and host of a webhook address: its path often is the credential (Slack hooks). */
function originOf(url: string): string {
	try {
		return new URL(url).origin;
	} catch {
		return "the notify address";
	}
}
