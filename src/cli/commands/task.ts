import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { Command } from "commander";
import type { TaskState } from "../../api/index.js";
import { UsageError } from "../../common/index.js";
import { connectScraper } from "../../library/index.js";
import { type CliContext, useColor, writeJson, writeLine } from "../context.js";
import { EXIT } from "../exit-codes.js";
import { createStyle, formatNumber, type Style } from "../format/index.js";
import { answeringErrorsInJson } from "../json-error.js";
import { addServiceOptions, connectService, type ServiceFlags } from "../service-connection.js";

export interface TaskFlags extends ServiceFlags {
	json?: boolean;
	out?: string;
}

export function registerTaskCommand(program: Command, ctx: CliContext): void {
	const command = program
		.command("task")
		.description("show one scraper task's state, and its result once it has finished")
		.argument("<task-id>", "the task id a timed-out or async fetch returned")
		.option("--json", "print {task_id, state, ...} with the content (or content_path with --out)")
		.option("--out <file>", "save the finished task's content to this file instead of printing it");
	addServiceOptions(command);
	command.addHelpText(
		"after",
		`
Calls GET {scraper_url}/scraper/tasks/<task-id> once (no polling; \`run\` polls its own tasks).
Exit codes: 0 finished or still running · 1 failed, unknown or expired.

Examples:
  npx scrapejob task 4f9c2a
  npx scrapejob task 4f9c2a --out page.html`,
	);
	command.action((taskId: string, flags: TaskFlags) =>
		answeringErrorsInJson(ctx, flags.json === true, async () => {
			await runTask(ctx, taskId, flags);
		}),
	);
}

export async function runTask(ctx: CliContext, taskId: string, flags: TaskFlags): Promise<void> {
	const id = taskId.trim();
	if (id === "" || /[\s/?#]/.test(id))
		throw new UsageError(`TASK_ID must be a task id without spaces or slashes (got ${JSON.stringify(taskId)})`);
	const connection = await connectService(ctx, flags);
	try {
		const scraper = await connectScraper(ctx, connection);
		const state = await scraper.client.task(id, ctx.signal);
		const contentPath =
			state.state === "completed" && flags.out !== undefined ? resolve(ctx.cwd, flags.out) : undefined;
		if (state.state === "completed" && contentPath) await writeFile(contentPath, state.body);
		if (state.state === "failed" || state.state === "not_found" || state.state === "unknown") {
			ctx.exitCode = EXIT.someTargetsFailed;
		}
		// A task id from a sandbox run's record is never found by a second sandbox command: said, not left a puzzle.
		if (state.state === "not_found" && flags.sandbox)
			writeLine(
				ctx.stderr,
				"scrapejob: --sandbox starts an empty emulator for each command, so no task of an earlier run is in it; to look one up, run `npx scrapejob emulator --demo-site` and point both the run and `task` at it (docs/guides/emulator.md)",
			);
		if (flags.json) {
			writeJson(ctx.stdout, taskJson(id, state, contentPath));
			return;
		}
		const style = createStyle(useColor(ctx, ctx.stdout));
		for (const line of describeTask(id, state, contentPath, style)) writeLine(ctx.stdout, line);
		if (state.state === "completed" && !contentPath) {
			// A screenshot or PDF would garble the terminal; those are for --out.
			if (state.body.includes(0)) writeLine(ctx.stdout, "(binary content: save it with --out FILE)");
			else {
				ctx.stdout.write(state.body);
				if (state.body.length > 0 && state.body[state.body.length - 1] !== 0x0a) ctx.stdout.write("\n");
			}
		}
	} finally {
		await connection.close();
	}
}

/** The JSON form: snake_case like the service's records; content as text, or its path when saved. */
export function taskJson(id: string, state: TaskState, contentPath: string | undefined): Record<string, unknown> {
	switch (state.state) {
		case "pending":
		case "unknown":
			return { task_id: id, state: state.state, status: state.status };
		case "not_found":
			return { task_id: id, state: "not_found" };
		case "failed":
			return {
				task_id: id,
				state: "failed",
				error: state.errorType,
				message: state.message,
				credits_used: state.creditsUsed ?? null,
			};
		case "completed":
			return {
				task_id: id,
				state: "completed",
				target_status: state.targetStatus ?? null,
				mode_used: state.modeUsed ?? null,
				credits_used: state.creditsUsed ?? null,
				credits_remaining: state.creditsRemaining ?? null,
				bytes: state.body.length,
				...(contentPath ? { content_path: contentPath } : { content: state.body.toString("utf8") }),
			};
		default: {
			const never: never = state;
			return never;
		}
	}
}

function describeTask(id: string, state: TaskState, contentPath: string | undefined, style: Style): string[] {
	switch (state.state) {
		case "pending":
			return [`task ${id}: ${style.yellow(state.status)} (still running; ask again later)`];
		case "unknown":
			return [`task ${id}: status ${JSON.stringify(state.status)} is not one this client knows`];
		case "not_found":
			return [`task ${id}: ${style.red("not found")} (no such task, or its result has expired)`];
		case "failed":
			return [
				`task ${id}: ${style.red("failed")}`,
				`  error    ${state.errorType}`,
				...(state.message !== state.errorType ? [`  message  ${state.message}`] : []),
				...(state.creditsUsed !== undefined ? [`  credits used  ${formatNumber(state.creditsUsed)}`] : []),
			];
		case "completed": {
			const lines = [`task ${id}: ${style.green("completed")}`];
			const fields: Array<[string, string | undefined]> = [
				["target status", state.targetStatus?.toString()],
				["mode used", state.modeUsed],
				["credits used", state.creditsUsed === undefined ? undefined : formatNumber(state.creditsUsed)],
				["credits left", state.creditsRemaining === undefined ? undefined : formatNumber(state.creditsRemaining)],
				["content", contentPath ? `${state.body.length} bytes saved to ${contentPath}` : `${state.body.length} bytes`],
			];
			for (const [name, value] of fields) if (value !== undefined) lines.push(`  ${name.padEnd(13)}  ${value}`);
			if (!contentPath) lines.push(style.dim("--- content ---"));
			return lines;
		}
		default: {
			const never: never = state;
			return never;
		}
	}
}
