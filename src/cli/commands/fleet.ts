import { resolve } from "node:path";
import type { Command } from "commander";
import { CLI_WORDS, UsageError } from "../../common/index.js";
import { loadJobWorded, RECORD_VARIABLES } from "../../job/index.js";
import { type FleetStatus, fleetStatusOf, targetCounts } from "../../library/index.js";
import { type CliContext, writeLine } from "../context.js";
import { formatTable } from "../format/index.js";
import { answerInvalidJob, answeringErrorsInJson } from "../json-error.js";
import { connectService } from "../service-connection.js";

interface FleetStatusFlags {
	fleet?: string;
	fleetRun?: string;
	config?: string;
	json?: boolean;
}

export function registerFleetCommand(program: Command, ctx: CliContext): void {
	const fleet = program
		.command("fleet")
		.description("the job's fleet runs in PostgreSQL (run --fleet): where each stands");
	fleet
		.command("status")
		.description(
			"a job's fleet runs: targets queued / leased / done / failed / parked, workers, in flight, credits, pause, breakers",
		)
		.argument("<job>", "the job file (its name finds the job's fleet runs)")
		.option("--fleet <url>", "the fleet's PostgreSQL, postgres://… (env SCRAPEJOB_FLEET_URL)")
		.option("--fleet-run <name>", "only the fleet run of that name (as the workers' --fleet-run), however old")
		.option("--config <file>", "KEY=VALUE file setting SCRAPEJOB_* variables (flags and env win over it)")
		.option("--json", "print the runs as JSON (what a dashboard or an alert reads)")
		.addHelpText(
			"after",
			`
Reads the fleet's tables (schema SCRAPEJOB_FLEET_SCHEMA, default scrapejob); sends nothing to the service
and creates or upgrades nothing: a schema without fleet tables, or with an older scrapejob's, exits 2.
Shows the newest ten runs of the job, or with --fleet-run the run of that name (a name the job has no
run of exits 2, naming its newest runs). A worker that stopped cleanly shows when it ended; one whose last
beat is older than the lease (30 s) is gone (killed): its targets and slots pass to the others.
Only the \${VAR}s of the job's name, output and fields (extract, carry) need to be set.

Examples:
  npx scrapejob fleet status jobs/example-shop.yaml --fleet "$SCRAPEJOB_FLEET_URL"
  npx scrapejob fleet status jobs/example-shop.yaml --fleet-run shop-2026-11-27
  npx scrapejob fleet status jobs/example-shop.yaml --json | jq '.[0].targets'`,
		)
		.action((jobFile: string, flags: FleetStatusFlags) =>
			answeringErrorsInJson(ctx, flags.json === true, () => fleetStatusCommand(ctx, jobFile, flags)),
		);
}

async function fleetStatusCommand(ctx: CliContext, jobFile: string, flags: FleetStatusFlags): Promise<void> {
	let jobName: string;
	try {
		({
			job: { name: jobName },
		} = await loadJobWorded(
			resolve(ctx.cwd, jobFile),
			{
				env: ctx.env,
				cwd: ctx.cwd,
				checkSources: false,
				variablesNeeded: RECORD_VARIABLES,
			},
			CLI_WORDS,
		));
	} catch (error) {
		answerInvalidJob(ctx, flags.json === true, error);
		return;
	}
	const connection = await connectService(ctx, {
		...(flags.config !== undefined ? { config: flags.config } : {}),
		...(flags.fleet !== undefined ? { fleet: flags.fleet } : {}),
	});
	const url = connection.config.fleetUrl;
	if (url === undefined) throw new UsageError("no fleet: pass --fleet postgres://… or set SCRAPEJOB_FLEET_URL");
	const schema = connection.config.fleetSchema;
	const runs = await fleetStatusOf(
		jobName,
		{ url, ...(schema ? { schema } : {}) },
		flags.fleetRun !== undefined ? { runName: flags.fleetRun } : {},
	);
	if (flags.json) {
		writeLine(ctx.stdout, JSON.stringify(runs.map(statusJson), null, 2));
		return;
	}
	if (runs.length === 0) {
		writeLine(ctx.stdout, `${jobName}: no fleet runs`);
		return;
	}
	for (const run of runs) writeLine(ctx.stdout, statusText(run));
}

/** A run's status in snake_case, as every other JSON the CLI prints. */
function statusJson(status: FleetStatus) {
	return {
		job: status.run.jobName,
		run: status.run.runName,
		state: status.run.state,
		created_at: status.run.createdAt.toISOString(),
		// Fresh targets only when some are, as parked ones: the usual four states keep their shape.
		targets: { ...targetCounts(status.targets), ...(status.fresh > 0 ? { fresh: status.fresh } : {}) },
		workers: status.workers.map((worker) => ({
			id: worker.id,
			hostname: worker.hostname,
			pid: worker.pid,
			started_at: worker.startedAt.toISOString(),
			last_beat: worker.lastBeat.toISOString(),
			last_beat_age_s: Math.max(0, (status.at.getTime() - worker.lastBeat.getTime()) / 1000),
			ended_at: worker.endedAt?.toISOString() ?? null,
		})),
		in_flight: status.inFlight,
		concurrency_limit: status.concurrencyLimit,
		credits: status.credits,
		paused_until: status.pausedUntil?.toISOString() ?? null,
		breakers: status.breakers.map((breaker) => ({
			domain: breaker.domain,
			state: breaker.state,
			reason: breaker.reason,
			opened_at: breaker.openedAt.toISOString(),
			parked: breaker.parked,
			credits_saved: breaker.creditsSaved,
		})),
		at: status.at.toISOString(),
	};
}

function statusText(status: FleetStatus): string {
	const { targets, credits } = status;
	const lines = [
		`${status.run.jobName} · fleet run ${status.run.runName} · ${status.run.state} (opened ${status.run.createdAt.toISOString()})`,
		`  targets    ${targets.queued} queued, ${targets.leased} leased, ${targets.done} done, ${targets.failed} failed${targets.parked > 0 ? `, ${targets.parked} parked` : ""}${status.fresh > 0 ? `; ${status.fresh} fresh (skipped: freshness)` : ""}`,
		`  in flight  ${status.inFlight} of ${status.concurrencyLimit}`,
		`  credits    ${credits.spent} spent, ${credits.reserved} reserved${credits.max === null ? "" : ` of ${credits.max}`}`,
	];
	if (status.pausedUntil) lines.push(`  paused     until ${status.pausedUntil.toISOString()} (429)`);
	for (const breaker of status.breakers)
		lines.push(
			`  breaker    ${breaker.domain} ${breaker.state} since ${breaker.openedAt.toISOString()}; ${breaker.parked} parked, ${breaker.creditsSaved} credits saved: ${breaker.reason}`,
		);
	if (status.workers.length > 0) {
		const rows = status.workers.map((worker) => [
			worker.id,
			worker.hostname,
			String(worker.pid),
			worker.endedAt === null
				? `${secondsAgo(status.at, worker.lastBeat)} s ago`
				: `ended ${secondsAgo(status.at, worker.endedAt)} s ago`,
		]);
		const columns = ["worker", "host", "pid", "last beat"].map((header) => ({ header }));
		lines.push(...formatTable(columns, rows, { indent: "  " }));
	}
	return lines.join("\n");
}

function secondsAgo(now: Date, then: Date): number {
	return Math.round((now.getTime() - then.getTime()) / 1000);
}
