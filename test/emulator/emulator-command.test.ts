import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { Command } from "commander";
import { describe, expect, test } from "vitest";
import { DEFAULT_EMULATOR_PORT, demoSitePort, registerEmulatorCommand } from "../../src/cli/commands/emulator.js";
import type { CliContext } from "../../src/cli/context.js";
import { UsageError } from "../../src/common/index.js";
import { runCli } from "../helpers/run-cli.js";
import { call, waitFor } from "./helpers.js";

function fakeContext(cwd = process.cwd()) {
	const stdout = new PassThrough();
	const stderr = new PassThrough();
	let out = "";
	stdout.on("data", (chunk: Buffer) => {
		out += chunk.toString();
	});
	const controller = new AbortController();
	const ctx: CliContext = { stdout, stderr, env: {}, cwd, exitCode: 0, signal: controller.signal };
	return { ctx, controller, output: () => out };
}

function program(ctx: CliContext): Command {
	const command = new Command().exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} });
	registerEmulatorCommand(command, ctx);
	return command;
}

describe("scrapejob emulator", () => {
	test("prints one JSON line with the addresses and keys, serves until the signal aborts", async () => {
		const { ctx, controller, output } = fakeContext();
		const running = program(ctx).parseAsync(["emulator", "--port", "0", "--demo-site"], { from: "user" });
		const line = await waitFor(() => (output().includes("\n") ? output() : null));
		expect(line.split("\n").filter(Boolean)).toHaveLength(1);
		const info = JSON.parse(line) as Record<string, string>;
		expect(Object.keys(info)).toEqual(["apiUrl", "scraperUrl", "accountKey", "scraperKey", "demoSiteUrl"]);
		expect(info.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
		expect(info.scraperUrl).toBe(`${info.apiUrl}/api/v1`);
		expect(info.accountKey).toBe("emulator-account-key");
		expect(info.scraperKey).toBe("emulator-scraper-key");
		const scraped = await call(
			`${info.scraperUrl}/scraper/realtime?${new URLSearchParams({ url: `${info.demoSiteUrl}/product/1` })}`,
			{ headers: { "x-api-key": info.scraperKey as string } },
		);
		expect(scraped.status).toBe(200);
		expect(scraped.text).toContain("Product 1");
		controller.abort();
		await running;
		await expect(fetch(`${info.apiUrl}/public`)).rejects.toThrow();
		expect(output().trim().split("\n")).toHaveLength(1);
	});

	test("--scenario is read relative to the working directory", async () => {
		const dir = await mkdtemp(join(tmpdir(), "scrapejob-emulator-cmd-"));
		try {
			await writeFile(join(dir, "s.yaml"), "keys: { scraper: my-key }\ncredits: 3\n");
			const { ctx, controller, output } = fakeContext(dir);
			const running = program(ctx).parseAsync(["emulator", "--port", "0", "--scenario", "s.yaml"], { from: "user" });
			const info = JSON.parse(await waitFor(() => (output().includes("\n") ? output() : null))) as Record<
				string,
				string
			>;
			expect(info.scraperKey).toBe("my-key");
			expect(info.demoSiteUrl).toBeUndefined();
			const access = await call(`${info.apiUrl}/public/scraper`, {
				headers: { "x-apikey": info.accountKey as string },
			});
			expect(access.json.credits).toBe(3);
			controller.abort();
			await running;
		} finally {
			await rm(dir, { recursive: true, force: true });
		}
	});

	test("a bad scenario file is a UsageError and nothing is printed", async () => {
		const dir = await mkdtemp(join(tmpdir(), "scrapejob-emulator-cmd-"));
		try {
			await writeFile(join(dir, "bad.yaml"), "credits: lots\n");
			const { ctx, output } = fakeContext(dir);
			const error = await program(ctx)
				.parseAsync(["emulator", "--port", "0", "--scenario", "bad.yaml"], { from: "user" })
				.catch((caught: unknown) => caught);
			expect(error).toBeInstanceOf(UsageError);
			expect((error as Error).message).toMatch(/bad\.yaml:1:\d+ credits: /);
			expect(output()).toBe("");
		} finally {
			await rm(dir, { recursive: true, force: true });
		}
	});

	test("a port in use is a UsageError; a bad --port is refused by commander", async () => {
		const first = fakeContext();
		const running = program(first.ctx).parseAsync(["emulator", "--port", "0"], { from: "user" });
		const info = JSON.parse(await waitFor(() => (first.output().includes("\n") ? first.output() : null))) as {
			apiUrl: string;
		};
		const port = new URL(info.apiUrl).port;
		const second = fakeContext();
		const error = await program(second.ctx)
			.parseAsync(["emulator", "--port", port], { from: "user" })
			.catch((caught: unknown) => caught);
		expect(error).toBeInstanceOf(UsageError);
		expect((error as Error).message).toContain(`port ${port} on 127.0.0.1 is in use`);
		first.controller.abort();
		await running;
		const third = fakeContext();
		await expect(program(third.ctx).parseAsync(["emulator", "--port", "99999"], { from: "user" })).rejects.toThrow(
			/0 to 65535/,
		);
	});
});

describe("the demo instructions name the demo site's port", () => {
	test("`emulator --port N --demo-site` serves the site on N+1; demo.yaml and `validate --help` name the default", async () => {
		const { createServer } = await import("node:net");
		const listenOn = (port: number) =>
			new Promise<import("node:net").Server | null>((resolve) => {
				const server = createServer();
				server.once("error", () => resolve(null));
				server.listen(port, "127.0.0.1", () => resolve(server));
			});
		const close = (server: import("node:net").Server) => new Promise<void>((resolve) => server.close(() => resolve()));
		// A port N whose neighbour N+1 (the demo site's) is free too, so the test does not race other servers.
		let free = 0;
		for (let tries = 0; tries < 20 && free === 0; tries += 1) {
			const first = await listenOn(0);
			if (!first) continue;
			const port = (first.address() as { port: number }).port;
			const second = await listenOn(port + 1);
			await close(first);
			if (second) {
				await close(second);
				free = port;
			}
		}
		expect(free).toBeGreaterThan(0);
		const { ctx, controller, output } = fakeContext();
		const running = program(ctx).parseAsync(["emulator", "--port", String(free), "--demo-site"], { from: "user" });
		const info = JSON.parse(await waitFor(() => (output().includes("\n") ? output() : null), 10_000)) as Record<
			string,
			string
		>;
		expect(info.apiUrl).toBe(`http://127.0.0.1:${free}`);
		expect(info.demoSiteUrl).toBe(`http://127.0.0.1:${demoSitePort(free)}`);
		controller.abort();
		await running;

		const site = `SCRAPEJOB_DEMO_SITE=http://127.0.0.1:${demoSitePort(DEFAULT_EMULATOR_PORT)} `;
		const demoJob = await readFile(join(import.meta.dirname, "..", "..", "jobs", "demo.yaml"), "utf8");
		expect(demoJob).toContain(site);
		const help = await runCli(["validate", "--help"]);
		expect(help.stdout).toContain(site);
		expect(`${demoJob}${help.stdout}`).not.toMatch(/DEMO_SITE=http:\/\/127\.0\.0\.1:(?!8701)/);
	});
});
