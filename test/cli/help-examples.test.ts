import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { expect, it } from "vitest";
import { RUN_EXIT_TABLE } from "../../src/cli/exit-codes.js";
import { createProgram } from "../../src/cli/index.js";
import { runCli } from "../helpers/run-cli.js";
import { createTestContext } from "../job/helpers.js";

/**
 * `--help` examples are commands to paste (docs/behaviour.md, "Summaries and hints": the
 * documented form). After `npm ci` a bare `scrapejob` is not on PATH; `npx scrapejob` is. The job files they name
 * are the repository's own.
 */

const repo = join(import.meta.dirname, "..", "..");

/** Every command of the program, as `scrapejob --help` lists them. */
async function commandNames(): Promise<string[]> {
	return (await createProgram(createTestContext(repo).ctx)).commands.map((command) => command.name());
}

/** The lines of a help text's `Examples:` block: indented lines up to the first blank one. */
function exampleLines(help: string): string[] {
	const start = help.indexOf("\nExamples:\n");
	if (start < 0) return [];
	const lines: string[] = [];
	for (const line of help.slice(start + "\nExamples:\n".length).split("\n")) {
		if (!line.startsWith("  ")) break;
		lines.push(line.trim());
	}
	return lines;
}

/** Files of the repository a one-folder pattern such as `jobs/*.yaml` matches (Node 20 has no fs.glob). */
function matches(pattern: string): number {
	const name = new RegExp(
		`^${basename(pattern)
			.replace(/[.+?^${}()|[\]\\]/g, "\\$&")
			.replace(/\*/g, ".*")}$`,
	);
	return readdirSync(join(repo, dirname(pattern))).filter((file) => name.test(file)).length;
}

/** Other tools an example may show (what to do with a file scrapejob wrote). */
const OTHER_TOOLS = ["sqlite3 "];

it("every --help example starts with `npx scrapejob <its command>`, and names job files that exist", async () => {
	const names = await commandNames();
	expect(names).toEqual(expect.arrayContaining(["run", "validate", "export", "extract"]));
	const offending: string[] = [];
	let examples = 0;
	for (const name of names) {
		const help = await runCli([name, "--help"]);
		expect(help.code, name).toBe(0);
		for (const line of exampleLines(help.stdout)) {
			// A continuation line says what the one above needs.
			if (line.startsWith("(")) continue;
			if (OTHER_TOOLS.some((tool) => line.startsWith(tool))) continue;
			examples += 1;
			// Environment assignments may come first: `SCRAPEJOB_DEMO_SITE=… npx scrapejob validate …`.
			const command = line.replace(/^(?:[A-Z_]+=\S+\s+)*/, "");
			if (!command.startsWith(`npx scrapejob ${name}`)) offending.push(`${name}: ${line}`);
			for (const job of command.match(/\bjobs\/\S+\.ya?ml\b/g) ?? []) {
				const found = job.includes("*") ? matches(job) > 0 : existsSync(join(repo, job));
				if (!found) offending.push(`${name}: ${job} is not in the repository`);
			}
		}
		// Prose that names a command names it the runnable way too.
		for (const match of help.stdout.matchAll(/`scrapejob [a-z]/g)) offending.push(`${name}: ${match[0]}`);
	}
	expect(offending).toEqual([]);
	expect(examples).toBeGreaterThan(20);
});

it("`run --help` names every exit code a run may end with (5, a full disk, was missing) and what a scheduler does on it", async () => {
	const help = (await runCli(["run", "--help"])).stdout;
	const block = help.slice(help.indexOf("\nExit codes"), help.indexOf("\nExamples:"));
	const codes = [...block.matchAll(/^ {2}(\d+) /gm)].map((match) => Number(match[1]));
	expect(codes.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 130, 137]);
	for (const row of RUN_EXIT_TABLE) expect(block).toContain(`→ ${row.scheduler}`);
});

it("the exit-code reference's table has run --help's rows: each code's meaning and the scheduler's action", () => {
	const readme = readFileSync(join(repo, "docs", "reference", "exit-codes.md"), "utf8");
	for (const row of RUN_EXIT_TABLE) expect(readme).toContain(`| ${row.code} | ${row.meaning} | ${row.scheduler} |`);
});

it("the exit-code reference names every command whose --help says it exits 1 outside a run (task's not found was missing)", async () => {
	const readme = readFileSync(join(repo, "docs", "reference", "exit-codes.md"), "utf8").replace(/\s+/g, " ");
	const exitingOne: string[] = [];
	for (const name of ["health", "merge", "task", "validate"]) {
		const help = (await runCli([name, "--help"])).stdout.replace(/\s+/g, " ");
		const codes = /Exit codes: (.*?)(?:\. |$)/.exec(help)?.[1];
		expect(codes, name).toBeDefined();
		if (/(^|· )1 /.test(codes!)) exitingOne.push(name);
	}
	expect(exitingOne).toEqual(["health", "merge", "task"]);
	for (const name of exitingOne) expect(readme, name).toContain(`\`${name}\` exits 1`);
});
