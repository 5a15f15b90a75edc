import { existsSync } from "node:fs";
import { basename, extname, resolve } from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import { CLI_WORDS, UsageError } from "../../common/index.js";
import { resolveFleetConfig } from "../../config/index.js";
import {
	checkExportTarget,
	EXPORT_FORMATS,
	type ExportFormat,
	exportLatest,
	openJobHistory,
} from "../../history/index.js";
import { loadJobWorded, RECORD_VARIABLES } from "../../job/index.js";
import { exportFleetLatest, withSandboxDemoSite } from "../../library/index.js";
import { csvColumnsFor, jobOutputDir } from "../../output/index.js";
import { type CliContext, writeLine } from "../context.js";
import { answerInvalidJob, answeringErrorsInJson } from "../json-error.js";

function format(value: string): ExportFormat {
	if (!(EXPORT_FORMATS as readonly string[]).includes(value)) {
		throw new InvalidArgumentError(
			`--format must be one of ${EXPORT_FORMATS.join(", ")}, got ${JSON.stringify(value)}`,
		);
	}
	return value as ExportFormat;
}

/** The format a file's name says it holds; null for a name of no format's. */
function formatNamedBy(out: string): ExportFormat | null {
	const extension = extname(out).toLowerCase();
	if (extension === ".csv") return "csv";
	if (extension === ".jsonl" || extension === ".ndjson") return "jsonl";
	if (extension === ".parquet") return "parquet";
	if (extension === ".sqlite" || extension === ".sqlite3" || extension === ".db") return "sqlite";
	return null;
}

/**
 * Without --format, the one --out's name says (shop.parquet is Parquet); a --format another than the
 * name's is refused, so no file holds a format its name belies.
 */
function exportFormat(out: string, given: ExportFormat | undefined): ExportFormat {
	const named = formatNamedBy(out);
	if (given === undefined) return named ?? "csv";
	if (named !== null && named !== given)
		throw new UsageError(
			`--out ${basename(out)} names a ${named} file but --format is ${given}: pass --format ${named}, or an --out ending in the format's extension`,
		);
	return given;
}

export function registerExportCommand(program: Command, ctx: CliContext): void {
	program
		.command("export")
		.description("write the newest ok record of every target across a job's runs to one file")
		.argument("<job>", "the job file (its name finds output/<job>/)")
		.requiredOption("--latest", "the newest ok record per target (the only selection there is)")
		.requiredOption("--out <file>", "the file to write (outside the job's output folder)")
		.option("--force", "replace --out when it exists")
		.option(
			"--format <format>",
			`${EXPORT_FORMATS.join(" | ")} (default: the one --out's extension names, else csv)`,
			format,
		)
		.option("--from <dir>", "root folder of results (as run --out)", "output")
		.option("--accept <run-id>", "first promote that run, held back by its data contract (contract_failed), to latest")
		.option(
			"--fleet <url>",
			"the fleet's results instead: the newest ok record per target across the job's fleet runs in PostgreSQL (run --fleet)",
		)
		.option("--json", "print {records, format, out} as JSON")
		.addHelpText(
			"after",
			`
Reads the job's store (output/<job>/history.sqlite, rebuilt from the run folders when missing or
damaged) and each target's newest ok record from its run's results.jsonl, in bounded memory. csv has
the runs' columns (extracted fields included); jsonl the records as written (without inline content);
parquet and sqlite (table latest) have id, url, http_status, finished_at, content_hash, credits_used
and a column per extracted (and carried) field: a number column when every value is a number, text
otherwise (a field whose name matches another's ignoring case, such as URL, is written data_URL).
The file is written under a new temporary name beside --out and renamed when complete. --out may not
be inside the job's output folder, nor a folder; an existing file is replaced only with --force.
Only the \${VAR}s of the job's name, output and fields (extract, carry) need to be set.

Examples:
  npx scrapejob export jobs/example-shop.yaml --latest --format parquet --out shop-latest.parquet
  sqlite3 shop.db 'select url, price from latest'   # after --format sqlite --out shop.db
  npx scrapejob export jobs/example-shop.yaml --latest --fleet "$SCRAPEJOB_FLEET_URL" --out shop.csv`,
		)
		.action(
			async (
				jobFile: string,
				flags: {
					out: string;
					format?: ExportFormat;
					from: string;
					json?: boolean;
					force?: boolean;
					accept?: string;
					fleet?: string;
				},
			) =>
				answeringErrorsInJson(ctx, flags.json === true, async () => {
					let job: Awaited<ReturnType<typeof loadJobWorded>>["job"];
					try {
						const env = withSandboxDemoSite(ctx.env, resolve(ctx.cwd, flags.from));
						({ job } = await loadJobWorded(
							resolve(ctx.cwd, jobFile),
							{
								env,
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
					const jobDir = jobOutputDir(resolve(ctx.cwd, flags.from), job.name);
					if (flags.out.trim() === "") throw new UsageError("--out is empty: name the file to write");
					const out = resolve(ctx.cwd, flags.out);
					checkExportTarget(out, jobDir, flags.force === true);
					const chosen = exportFormat(out, flags.format);
					const columns = csvColumnsFor({ data: job.extraction?.dataColumns, carry: job.extraction?.carry });
					if (flags.fleet !== undefined) {
						if (flags.accept !== undefined) throw new UsageError("--accept promotes a local run: not with --fleet");
						const { fleetSchema } = resolveFleetConfig(undefined, ctx.env);
						const written = await exportFleetLatest(
							job.name,
							{ url: flags.fleet, schema: fleetSchema },
							chosen,
							out,
							columns,
							job.output.csvMaxCell,
						);
						if (flags.json) writeLine(ctx.stdout, JSON.stringify({ records: written, format: chosen, out }));
						else
							writeLine(ctx.stdout, `${written} records (the newest ok one of each target, from the fleet) → ${out}`);
						return;
					}
					// A fleet worker's shell has SCRAPEJOB_FLEET_URL set: its records are in PostgreSQL, not here.
					const fleetHint = resolveFleetConfig(undefined, ctx.env).fleetUrl
						? '; SCRAPEJOB_FLEET_URL is set: the fleet\'s records are exported with --fleet "$SCRAPEJOB_FLEET_URL"'
						: "";
					const nothingToExport = () =>
						new UsageError(`no records of job ${job.name} under ${jobDir}: nothing to export${fleetHint}`);
					if (!existsSync(jobDir)) throw nothingToExport();
					const history = openJobHistory(jobDir);
					for (const warning of history.warnings) writeLine(ctx.stderr, `scrapejob: warning: ${warning}`);
					let records: number;
					try {
						if (flags.accept !== undefined) {
							const promoted = history.accept(flags.accept);
							writeLine(
								ctx.stderr,
								`scrapejob: ${promoted ? `run ${flags.accept} accepted: its records are promoted to latest` : `run ${flags.accept} is not held back by its contract: nothing to accept`}`,
							);
						}
						if (history.size === 0) throw nothingToExport();
						records = await exportLatest(history, chosen, out, columns, job.output.csvMaxCell);
					} finally {
						history.close();
					}
					if (flags.json) writeLine(ctx.stdout, JSON.stringify({ records, format: chosen, out }));
					else writeLine(ctx.stdout, `${records} records (the newest ok one of each target) → ${out}`);
				}),
		);
}
