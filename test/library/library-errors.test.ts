import { appendFileSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import * as library from "../../src/index.js";
import {
	CorruptResultsError,
	FleetDatabaseError,
	OutputError,
	runJobFile,
	ScrapejobError,
	UsageError,
} from "../../src/index.js";
import { onlyRunDir, shopJobYaml, tempDir, writeJob } from "../helpers/job-files.js";
import { useTestService } from "../helpers/service.js";
import { thrownBy } from "../helpers/thrown-by.js";

describe("the errors a library call throws can be matched with instanceof from the package's entry", () => {
	it("OutputError: the run folder cannot be made (a file in the way); nothing sent", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 2));
		writeFileSync(join(dir, "a-file"), "not a folder\n");
		const error = await thrownBy(runJobFile(job, { env: service.env, out: join(dir, "a-file", "out") }));
		expect(error).toBeInstanceOf(OutputError);
		expect(error).toBeInstanceOf(ScrapejobError);
		expect((error as OutputError).code).toBe("SCRAPEJOB_OUTPUT");
		expect((error as OutputError).path).toContain(join(dir, "a-file"));
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(0);
	});

	it("FleetDatabaseError: the fleet's database cannot be reached; its password is not in the message", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 2));
		// Port 9 (discard) on loopback: nothing listens, the connection is refused.
		const fleet = "postgres://worker:fleet-password@127.0.0.1:9/jobs";
		const error = await thrownBy(runJobFile(job, { env: service.env, out: join(dir, "out"), fleet }));
		expect(error).toBeInstanceOf(FleetDatabaseError);
		expect((error as FleetDatabaseError).code).toBe("SCRAPEJOB_FLEET_DATABASE");
		expect((error as Error).message).not.toContain("fleet-password");
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(0);
	});

	it("CorruptResultsError: a resume of a run whose results.jsonl holds a line that is not a record", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 3));
		// A budget for one target: the run stops unfinished, to be resumed.
		const first = await runJobFile(job, { env: service.env, out, maxCredits: 1 });
		expect(first.complete).toBe(false);
		appendFileSync(join(onlyRunDir(out, "shop"), "results.jsonl"), "not a record\n");
		const fetched = service.emulator.ledger.byEndpoint("realtime").length;
		const error = await thrownBy(runJobFile(job, { env: service.env, out, resume: true }));
		expect(error).toBeInstanceOf(CorruptResultsError);
		expect((error as CorruptResultsError).count).toBe(1);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(fetched);
	});
});

/** The sources the library is made of: not the CLI, not the emulator (its errors end as HTTP answers). */
function sourceFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true, recursive: true })
		.filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
		.map((entry) => join(entry.parentPath, entry.name))
		.filter((path) => !/\/src\/(cli|emulator)\//.test(path));
}

/** Error classes that never leave a library call, each with where it ends instead. */
const NOT_THROWN_BY_A_CALL: Record<string, string> = {
	BrowserSessionError: "a browser target's failure: it becomes the target's record, or a stop reason",
	FleetSchemaUnreadableError: "thrown only by the CLI's read-only fleet commands (fleet status, export --fleet)",
};

it("every ScrapejobError class below the CLI is exported from the package's entry, or listed with where it ends", () => {
	const src = join(import.meta.dirname, "..", "..", "src");
	const parents = new Map<string, { parent: string; file: string }>();
	for (const file of sourceFiles(src))
		for (const match of readFileSync(file, "utf8").matchAll(/^export class (\w+) extends (\w+)/gm))
			parents.set(match[1]!, { parent: match[2]!, file: relative(src, file) });
	const isScrapejobError = (name: string): boolean => {
		for (let at: string | undefined = name; at; at = parents.get(at)?.parent) if (at === "ScrapejobError") return true;
		return false;
	};
	const errors = [...parents.keys()].filter(isScrapejobError);
	expect(errors).toContain(UsageError.name);
	const missing = errors
		.filter((name) => !(name in library) && !(name in NOT_THROWN_BY_A_CALL))
		.map((name) => `${name} (${parents.get(name)?.file})`);
	expect(missing, "export these from src/index.ts, or list where they end").toEqual([]);
	for (const name of Object.keys(NOT_THROWN_BY_A_CALL)) expect(errors).toContain(name);
});
