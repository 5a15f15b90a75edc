import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runJobFile, UsageError } from "../../src/index.js";
import { savedCall } from "../emulator/helpers.js";
import { readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

/**
 * Jobs may name what the account keeps (issue 35): a `scheme_id` the account has gives its extraction;
 * an unknown one is refused before anything is sent (exit 2 naming it), through the CLI and the library.
 */

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

function schemeJob(site: string, schemeId: string): string {
	return [
		"name: saved",
		"defaults:",
		"  mode: request",
		"  delivery: json",
		`  scheme_id: ${schemeId}`,
		"targets:",
		`  - ${site}/product/1`,
		`  - ${site}/product/2`,
		"",
	].join("\n");
}

describe("saved ids in job files", () => {
	it("a saved scheme's extraction lands in the records; an unknown id is refused with nothing sent", async () => {
		service = await startTestService({ concurrency: 2 });
		const created = await savedCall(service.emulator, "POST", "/schemes", {
			name: "products",
			config: { extract_scheme: [{ label: "name", type: "content", selector: "h1" }] },
		});
		expect(created.status).toBe(201);
		const schemeId = created.json.id as string;
		const dir = tempDir();
		const out = join(dir, "out");

		const good = writeJob(dir, "good", schemeJob(service.site.url, schemeId));
		const result = await runCli(["run", good, "--out", out, "--quiet", "--json"], { env: service.env });
		expect(result.code).toBe(0);
		const records = readRecords(JSON.parse(result.stdout).run_dir as string);
		expect(records.map((record) => record.data?.name).sort()).toEqual(["Product 1", "Product 2"]);

		const sentBefore = service.emulator.ledger.byEndpoint("realtime").length;
		const bad = writeJob(dir, "bad", schemeJob(service.site.url, "sch_0000000000000000"));
		const refused = await runCli(["run", bad, "--out", out], { env: service.env });
		expect(refused.code).toBe(2);
		expect(refused.stderr).toContain(
			`scheme_id "sch_0000000000000000" is not among the account's saved extraction schemes (it has: ${schemeId})`,
		);
		await expect(runJobFile(bad, { env: service.env, out })).rejects.toBeInstanceOf(UsageError);
		expect(service.emulator.ledger.byEndpoint("realtime").length).toBe(sentBefore);
	}, 30_000);
});
