/**
 * `POST /account/configs/generate` (docs/service.md, "Tasks" and "Saved items"): a config written "by AI" from a prompt,
 * always in the background: 202 with a task id and the credits it holds, then
 * `/account/configs/generate/tasks/<id>` answers processing, completed (the saved config) or failed.
 * No model runs: the emulator takes the first address (or domain) the prompt names and saves a
 * config that fetches it with JSON delivery and a title/heading scheme. It holds
 * `GENERATION_RESERVED_CREDITS` while it works and charges `GENERATION_CREDITS` when it succeeds;
 * a failed generation is not charged.
 */
import { pause, timestamp } from "./http-io.js";
import { invalid, ok, type SavedAnswer, type SavedRequest } from "./saved-answers.js";
import { newId, type Params } from "./saved-items.js";
import { insufficientCreditsBody } from "./scrape-start.js";

export const GENERATION_RESERVED_CREDITS = 150;
export const GENERATION_CREDITS = 30;

/** The extraction a generated config carries. */
const GENERATED_SCHEME = [
	{ label: "title", type: "content", selector: "title" },
	{ label: "heading", type: "content", selector: "h1" },
];

function isText(value: unknown): value is string {
	return typeof value === "string" && value.trim() !== "";
}

/** The first `http(s)://…` address in the prompt, else its first domain-looking word as `https://<domain>/`. */
export function promptTarget(prompt: string): string | null {
	const address = /https?:\/\/[^\s"'<>)]+/i.exec(prompt)?.[0];
	if (address && URL.canParse(address)) return address;
	const domain = /\b(?:[a-z0-9-]+\.)+[a-z]{2,}\b/i.exec(prompt)?.[0];
	return domain ? `https://${domain.toLowerCase()}/` : null;
}

export function answerGenerate(request: SavedRequest): SavedAnswer {
	const { ctx, body, key, entry } = request;
	const problems: string[] = [];
	if (!isText(body.name)) problems.push("name: field required");
	if (!isText(body.prompt)) problems.push("prompt: field required");
	if (problems.length > 0) return invalid(problems);
	if (!ctx.credits.tryReserve(GENERATION_RESERVED_CREDITS)) {
		return { status: 402, body: insufficientCreditsBody(ctx, GENERATION_RESERVED_CREDITS) };
	}
	const job = ctx.generations.create(key, "gen_");
	entry.taskId = job.id;
	entry.taskStatus = "processing";
	const name = (body.name as string).trim();
	const prompt = body.prompt as string;
	void (async () => {
		await pause(ctx.config.latencyMs, ctx.signal);
		const url = promptTarget(prompt);
		if (url === null) {
			ctx.credits.settle(GENERATION_RESERVED_CREDITS, 0);
			ctx.generations.finish(job, "failed", {
				error: "Generation failed",
				message: "The prompt names no site or page to build a config for",
			});
			entry.taskStatus = "failed";
			return;
		}
		ctx.credits.settle(GENERATION_RESERVED_CREDITS, GENERATION_CREDITS);
		ctx.ledger.charge(entry, GENERATION_CREDITS);
		const now = new Date(ctx.clock()).toISOString();
		const config = ctx.saved.configs.add({
			id: newId("cfg_"),
			name,
			config: { url, mode: "auto", delivery: "json", extract_scheme: GENERATED_SCHEME },
			created_at: now,
			updated_at: now,
		});
		ctx.generations.finish(job, "completed", {
			config_id: config.id,
			config: { ...config },
			credits_used: GENERATION_CREDITS,
			credits_remaining: ctx.credits.balance,
		});
		entry.taskStatus = "completed";
	})();
	return ok(202, {
		task_id: job.id,
		status: "processing",
		message: "Config generation submitted for background processing",
		check_url: `/api/v1/account/configs/generate/tasks/${job.id}`,
		credits_reserved: GENERATION_RESERVED_CREDITS,
	});
}

export function answerGenerateTask(request: SavedRequest): SavedAnswer {
	const { ctx, key, id } = request;
	const job = ctx.generations.get(key, id ?? "");
	if (!job) {
		return {
			status: 404,
			body: {
				success: false,
				error: "Task not found",
				message: `No config generation task ${id ?? ""} for this key (unknown, another key's, or expired)`,
				timestamp: timestamp(),
			},
		};
	}
	const result: Params = job.result ?? {};
	switch (job.status) {
		case "processing":
			return ok(200, {
				task_id: job.id,
				status: "processing",
				message: "Config generation is still running. Check again shortly.",
				check_url: `/api/v1/account/configs/generate/tasks/${job.id}`,
				timestamp: timestamp(),
			});
		case "completed":
			return ok(200, { task_id: job.id, status: "completed", ...result, timestamp: timestamp() });
		default:
			return {
				status: 200,
				body: { success: false, task_id: job.id, status: "failed", ...result, credits_used: 0, timestamp: timestamp() },
			};
	}
}
