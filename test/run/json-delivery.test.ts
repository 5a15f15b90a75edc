import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

function job(site: string, content: "files" | "inline", extraDefaults = ""): string {
	return [
		"name: shop",
		"defaults:",
		"  mode: request",
		"  delivery: json",
		extraDefaults,
		"output:",
		`  content: ${content}`,
		"targets:",
		`  - url: ${site}/product/1`,
		"    id: p1",
		`  - url: ${site}/product/2`,
		"    id: p2",
		"    async: true",
		"",
	].join("\n");
}

describe("delivery: json keeps what was paid for", () => {
	it("saves the whole JSON body as pages/<id>.json, with bytes, title and the target's status_code in the record", async () => {
		service = await startTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const path = writeJob(dir, "shop", job(service.site.url, "files", "  include_content: true\n  content: markdown"));
		const result = await runCli(["run", path, "--out", out, "--quiet", "--json", "--task-poll-ms", "5"], {
			env: service.env,
		});
		expect(result.code).toBe(0);
		const runDir = (JSON.parse(result.stdout) as { run_dir: string }).run_dir;
		const records = readRecords(runDir).sort((a, b) => a.id.localeCompare(b.id));
		expect(records.map((record) => record.id)).toEqual(["p1", "p2"]);
		for (const [index, record] of records.entries()) {
			const id = index + 1;
			expect(record.content_path).toBe(`pages/p${id}.json`);
			const file = join(runDir, record.content_path ?? "");
			const body = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
			expect(body).toMatchObject({ title: `Product ${id}`, status_code: 200 });
			expect(String(body.content)).toContain(`# Product ${id}`);
			expect(record.bytes).toBe(statSync(file).size);
			expect(record.http_status).toBe(200);
			expect(record.data).toEqual({ title: `Product ${id}` });
		}
		// The async target went through a task: its task body is kept whole too.
		expect(records[1]?.task_id).not.toBeNull();
	});

	it("inline without include_content: the JSON object (title, status_code) is the record's content", async () => {
		service = await startTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const path = writeJob(dir, "shop", job(service.site.url, "inline"));
		const result = await runCli(["run", path, "--out", out, "--quiet", "--json", "--task-poll-ms", "5"], {
			env: service.env,
		});
		expect(result.code).toBe(0);
		const runDir = (JSON.parse(result.stdout) as { run_dir: string }).run_dir;
		const [first] = readRecords(runDir).filter((record) => record.id === "p1");
		expect(first?.content).toBeDefined();
		expect(JSON.parse(first?.content ?? "")).toMatchObject({ title: "Product 1", status_code: 200, credits_used: 2 });
		expect(first?.bytes).toBe(Buffer.byteLength(first?.content ?? ""));
		expect(first?.data).toEqual({ title: "Product 1" });
	});
});
