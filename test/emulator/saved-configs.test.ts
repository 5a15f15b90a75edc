import { describe, expect, test } from "vitest";
import type { Emulator } from "../../src/emulator/index.js";
import { type Answer, call, savedCall, scrapePost, useDemoSite, useEmulator, waitFor } from "./helpers.js";

function validationErrors(answer: Answer): string[] {
	return (answer.json.details as { validation_errors: string[] }).validation_errors;
}

function generationTask(emulator: Emulator, taskId: string) {
	return savedCall(emulator, "GET", `/configs/generate/tasks/${taskId}`);
}

describe("/account/configs", () => {
	test("create, read, list, update and delete a config", async () => {
		const emulator = await useEmulator();
		const created = await savedCall(emulator, "POST", "/configs", {
			name: "Product Scraper",
			config: { mode: "browser", extract_scheme: [{ label: "title", selector: "h1", type: "content" }] },
		});
		expect(created.status).toBe(201);
		const id = created.json.id as string;
		expect(id).toMatch(/^cfg_[0-9a-f]{16}$/);
		expect(created.json).toMatchObject({
			success: true,
			name: "Product Scraper",
			config: { mode: "browser" },
			message: "Scrape config created successfully",
		});
		expect(Date.parse(created.json.created_at as string)).not.toBeNaN();

		const read = await savedCall(emulator, "GET", `/configs/${id}`);
		expect(read.status).toBe(200);
		expect(read.json).toMatchObject({ success: true, id, name: "Product Scraper" });

		await savedCall(emulator, "POST", "/configs", { name: "Second", config: { mode: "request" } });
		const list = await savedCall(emulator, "GET", "/configs?sort_order=asc");
		expect(list.status).toBe(200);
		expect((list.json.configs as Array<{ name: string }>).map((config) => config.name)).toEqual([
			"Product Scraper",
			"Second",
		]);
		expect(list.json.pagination).toEqual({ page: 1, per_page: 20, total: 2 });
		const newestFirst = await savedCall(emulator, "GET", "/configs?per_page=1");
		expect((newestFirst.json.configs as Array<{ name: string }>).map((config) => config.name)).toEqual(["Second"]);
		const badPage = await savedCall(emulator, "GET", "/configs?per_page=500&sort_by=size");
		expect(badPage.status).toBe(422);
		expect(validationErrors(badPage)).toEqual([
			"per_page: must be a whole number from 1 to 100",
			"sort_by: must be one of created_at, updated_at, name",
		]);

		const updated = await savedCall(emulator, "PUT", `/configs/${id}`, { name: "Renamed" });
		expect(updated.status).toBe(200);
		expect(updated.json).toMatchObject({ id, name: "Renamed", config: { mode: "browser" } });
		const deleted = await savedCall(emulator, "DELETE", `/configs/${id}`);
		expect(deleted.status).toBe(200);
		expect(deleted.json).toMatchObject({ success: true, id });
		const gone = await savedCall(emulator, "GET", `/configs/${id}`);
		expect(gone.status).toBe(404);
		expect(gone.json).toMatchObject({ success: false, error: "Not found" });
		expect(emulator.ledger.totalCharged()).toBe(0);
	});

	test("missing or bad fields are a 422 listing each; an empty update too", async () => {
		const emulator = await useEmulator();
		const missing = await savedCall(emulator, "POST", "/configs", {});
		expect(missing.status).toBe(422);
		expect(missing.json).toMatchObject({ success: false, error: "Invalid request parameters" });
		expect(validationErrors(missing)).toEqual(["name: field required", "config: field required"]);
		const bad = await savedCall(emulator, "POST", "/configs", {
			name: " ",
			config: { url: "example.com", mode: "fast" },
		});
		expect(validationErrors(bad)).toEqual([
			"name: must be a non-empty string",
			"config.url: invalid URL format",
			"config.mode: invalid mode value",
		]);
		const created = await savedCall(emulator, "POST", "/configs", { name: "a", config: {} });
		const empty = await savedCall(emulator, "PUT", `/configs/${created.json.id as string}`, {});
		expect(empty.status).toBe(422);
		expect(validationErrors(empty)).toEqual(["body: nothing to update; give one of name, config"]);
		expect((await savedCall(emulator, "GET", "/configs")).json.pagination).toMatchObject({ total: 1 });
	});

	test("the scraper key is required (the account key is not it); other methods are 405", async () => {
		const emulator = await useEmulator();
		expect((await savedCall(emulator, "GET", "/configs", undefined, null)).status).toBe(401);
		const accountKey = await savedCall(emulator, "GET", "/configs", undefined, emulator.accountKey);
		expect(accountKey.status).toBe(401);
		expect(accountKey.json).toMatchObject({ success: false, error: "Invalid API key" });
		expect((await savedCall(emulator, "DELETE", "/configs")).status).toBe(405);
		expect((await savedCall(emulator, "GET", "/configs/x/y")).status).toBe(404);
	});

	test("realtime with config_id takes the saved parameters; an unknown id is a 422 naming it", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const created = await savedCall(emulator, "POST", "/configs", {
			name: "product 3",
			config: { url: `${site.url}/product/3`, mode: "request" },
		});
		const answer = await scrapePost(emulator, { config_id: created.json.id });
		expect(answer.status).toBe(200);
		expect(answer.headers.get("x-mode-used")).toBe("request");
		expect(answer.text).toContain("<h1>Product 3</h1>");
		expect(emulator.ledger.totalCharged()).toBe(2);
		const unknown = await scrapePost(emulator, { url: `${site.url}/product/1`, config_id: "cfg_nope" });
		expect(unknown.status).toBe(422);
		expect(validationErrors(unknown)).toEqual(["config_id: no saved config cfg_nope on this account"]);
		expect(emulator.ledger.totalCharged()).toBe(2);
	});

	test("a config a schedule runs cannot be deleted (409)", async () => {
		const emulator = await useEmulator();
		const config = await savedCall(emulator, "POST", "/configs", {
			name: "c",
			config: { url: "http://127.0.0.1:9/" },
		});
		const schedule = await savedCall(emulator, "POST", "/schedule", {
			name: "s",
			config_id: config.json.id,
			interval_minutes: 60,
		});
		const refused = await savedCall(emulator, "DELETE", `/configs/${config.json.id as string}`);
		expect(refused.status).toBe(409);
		expect(refused.json.message).toContain(schedule.json.id as string);
	});
});

describe("/account/configs/generate", () => {
	test("202 with a task that completes with a saved config; 30 of the 150 reserved credits are charged", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const submitted = await savedCall(emulator, "POST", "/configs/generate", {
			name: "Blog Scraper",
			prompt: `Scrape the title and heading of ${site.url}/product/4`,
		});
		expect(submitted.status).toBe(202);
		const taskId = submitted.json.task_id as string;
		expect(submitted.json).toMatchObject({
			success: true,
			status: "processing",
			check_url: `/api/v1/account/configs/generate/tasks/${taskId}`,
			credits_reserved: 150,
		});
		const done = await waitFor(async () => {
			const answer = await generationTask(emulator, taskId);
			return answer.json.status === "processing" ? null : answer;
		});
		expect(done.json).toMatchObject({ success: true, status: "completed", credits_used: 30 });
		const saved = await savedCall(emulator, "GET", `/configs/${done.json.config_id as string}`);
		expect(saved.json).toMatchObject({ name: "Blog Scraper", config: { url: `${site.url}/product/4` } });
		expect(emulator.credits()).toBe(10_000 - 30);
		expect(emulator.ledger.byEndpoint("config-generate")[0]?.creditsCharged).toBe(30);
		// The generated config works: its JSON delivery carries the extraction.
		const scraped = await scrapePost(emulator, { config_id: done.json.config_id });
		expect(scraped.json.extracted_data).toEqual({ title: "Product 4", heading: "Product 4" });
	});

	test("a prompt naming no site fails the task and charges nothing; 422 without a prompt; 402 below the reservation", async () => {
		const emulator = await useEmulator();
		const submitted = await savedCall(emulator, "POST", "/configs/generate", { name: "x", prompt: "anything nice" });
		const failed = await waitFor(async () => {
			const answer = await generationTask(emulator, submitted.json.task_id as string);
			return answer.json.status === "processing" ? null : answer;
		});
		expect(failed.json).toMatchObject({
			success: false,
			status: "failed",
			error: "Generation failed",
			credits_used: 0,
		});
		expect(emulator.credits()).toBe(10_000);
		const missing = await savedCall(emulator, "POST", "/configs/generate", { name: "x" });
		expect(missing.status).toBe(422);
		expect(validationErrors(missing)).toEqual(["prompt: field required"]);
		emulator.setCredits(100);
		const poor = await savedCall(emulator, "POST", "/configs/generate", { name: "x", prompt: "example.com" });
		expect(poor.status).toBe(402);
		const unknownTask = await call(`${emulator.scraperUrl}/account/configs/generate/tasks/gen_0`, {
			headers: { "x-api-key": emulator.scraperKey },
		});
		expect(unknownTask.status).toBe(404);
	});
});
