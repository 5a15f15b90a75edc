import { describe, expect, test } from "vitest";
import type { Emulator } from "../../src/emulator/index.js";
import { type Answer, savedCall, useDemoSite, useEmulator, waitFor } from "./helpers.js";

function validationErrors(answer: Answer): string[] {
	return (answer.json.details as { validation_errors: string[] }).validation_errors;
}

interface Run {
	id: string;
	status: string;
	url: string;
	credits_used: number;
	status_code: number | null;
	error: string | null;
}

async function runs(emulator: Emulator, id: string): Promise<Run[]> {
	return (await savedCall(emulator, "GET", `/schedule/${id}/runs?per_page=100`)).json.runs as Run[];
}

/** Wait until the schedule has at least `count` finished runs. */
function finishedRuns(emulator: Emulator, id: string, count: number): Promise<Run[]> {
	return waitFor(async () => {
		const list = (await runs(emulator, id)).filter((run) => run.status !== "running");
		return list.length >= count ? list : null;
	}, 5000);
}

async function configFor(emulator: Emulator, url: string): Promise<string> {
	const created = await savedCall(emulator, "POST", "/configs", { name: "c", config: { url, mode: "request" } });
	return created.json.id as string;
}

describe("/account/schedule", () => {
	test("a schedule runs its config every interval, each run charged at the scraper rate and listed newest first", async () => {
		const site = await useDemoSite();
		// One schedule minute lasts 25 ms here.
		const emulator = await useEmulator({ scenario: { schedule_minute_ms: 25 } });
		const configId = await configFor(emulator, `${site.url}/product/8`);
		const created = await savedCall(emulator, "POST", "/schedule", {
			name: "Hourly Price Monitor",
			config_id: configId,
			interval_minutes: 1,
		});
		expect(created.status).toBe(201);
		const id = created.json.id as string;
		expect(id).toMatch(/^job_[0-9a-f]{16}$/);
		expect(created.json).toMatchObject({
			success: true,
			name: "Hourly Price Monitor",
			config_id: configId,
			interval_minutes: 1,
			is_active: true,
			stop_on_error: true,
			last_run: null,
			message: "Schedule created successfully",
		});
		expect(Date.parse(created.json.next_run as string)).toBeGreaterThan(Date.now());
		const done = await finishedRuns(emulator, id, 2);
		for (const run of done) {
			expect(run).toMatchObject({ status: "success", url: `${site.url}/product/8`, credits_used: 2, status_code: 200 });
		}
		expect(done[0]?.id).toMatch(/^run_/);
		const runEntries = emulator.ledger.byEndpoint("schedule-run").filter((entry) => entry.status === 200);
		expect(runEntries.length).toBeGreaterThanOrEqual(2);
		expect(runEntries.every((entry) => entry.creditsCharged === 2)).toBe(true);
		const read = await savedCall(emulator, "GET", `/schedule/${id}`);
		expect(read.json).toMatchObject({ last_status: "success" });
		const runsAnswer = await savedCall(emulator, "GET", `/schedule/${id}/runs`);
		expect(runsAnswer.json).toMatchObject({ success: true, schedule_id: id, pagination: { page: 1, per_page: 20 } });
	});

	test("toggle pauses and activates; a paused schedule does not run while another one does", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { schedule_minute_ms: 20 } });
		const configId = await configFor(emulator, `${site.url}/product/1`);
		// 50 minutes (1 s here): paused long before its first run is due.
		const paused = (
			await savedCall(emulator, "POST", "/schedule", { name: "a", config_id: configId, interval_minutes: 50 })
		).json.id as string;
		const toggled = await savedCall(emulator, "POST", `/schedule/${paused}/toggle`);
		expect(toggled.status).toBe(200);
		expect(toggled.json).toMatchObject({ success: true, id: paused, is_active: false, next_run: null });
		const active = (
			await savedCall(emulator, "POST", "/schedule", { name: "b", config_id: configId, interval_minutes: 1 })
		).json.id as string;
		await finishedRuns(emulator, active, 3);
		expect(await runs(emulator, paused)).toEqual([]);
		const activeOnly = await savedCall(emulator, "GET", "/schedule?active_only=true");
		expect((activeOnly.json.schedules as Array<{ id: string }>).map((schedule) => schedule.id)).toEqual([active]);
		const resumed = await savedCall(emulator, "POST", `/schedule/${paused}/toggle`);
		expect(resumed.json).toMatchObject({ is_active: true, message: "Schedule activated" });
		await finishedRuns(emulator, paused, 1);
	});

	test("a failed run stops a schedule with stop_on_error; the run says why", async () => {
		const emulator = await useEmulator({ scenario: { schedule_minute_ms: 10 } });
		const configId = await configFor(emulator, "http://127.0.0.1:9/nothing-listens-here");
		const id = (await savedCall(emulator, "POST", "/schedule", { name: "x", config_id: configId, interval_minutes: 1 }))
			.json.id as string;
		const [run] = await finishedRuns(emulator, id, 1);
		expect(run).toMatchObject({ status: "failed", credits_used: 0 });
		expect(run?.error).toBeTruthy();
		const read = await waitFor(async () => {
			const answer = await savedCall(emulator, "GET", `/schedule/${id}`);
			return answer.json.is_active === false ? answer : null;
		});
		expect(read.json).toMatchObject({ last_status: "failed", next_run: null });
		expect(emulator.ledger.totalCharged()).toBe(0);
	});

	test("start_time ahead sets the first run; update and delete", async () => {
		const emulator = await useEmulator();
		const configId = await configFor(emulator, "http://127.0.0.1:9/");
		const start = new Date(Date.now() + 3_600_000).toISOString();
		const created = await savedCall(emulator, "POST", "/schedule", {
			name: "later",
			config_id: configId,
			interval_minutes: 1440,
			start_time: start,
			stop_on_error: false,
		});
		expect(created.json).toMatchObject({ next_run: start, start_time: start, stop_on_error: false });
		const id = created.json.id as string;
		const updated = await savedCall(emulator, "PUT", `/schedule/${id}`, { interval_minutes: 30, name: "renamed" });
		expect(updated.status).toBe(200);
		expect(updated.json).toMatchObject({ name: "renamed", interval_minutes: 30 });
		expect((await savedCall(emulator, "DELETE", `/schedule/${id}`)).status).toBe(200);
		expect((await savedCall(emulator, "GET", `/schedule/${id}`)).status).toBe(404);
		expect((await savedCall(emulator, "GET", `/schedule/${id}/runs`)).status).toBe(404);
		expect((await savedCall(emulator, "POST", `/schedule/${id}/toggle`)).status).toBe(404);
	});

	test("422 for missing fields, an unknown or url-less config, a bad interval or start_time", async () => {
		const emulator = await useEmulator();
		const missing = await savedCall(emulator, "POST", "/schedule", {});
		expect(missing.status).toBe(422);
		expect(validationErrors(missing)).toEqual([
			"name: field required",
			"config_id: field required",
			"interval_minutes: field required",
		]);
		const urlless = (await savedCall(emulator, "POST", "/configs", { name: "c", config: { mode: "request" } })).json
			.id as string;
		const bad = await savedCall(emulator, "POST", "/schedule", {
			name: "x",
			config_id: urlless,
			interval_minutes: 0.5,
			start_time: "tomorrow",
		});
		expect(validationErrors(bad)).toEqual([
			`config_id: config ${urlless} has no url to scrape`,
			"interval_minutes: must be a whole number of minutes, at least 1",
			"start_time: must be an ISO 8601 date-time",
		]);
		const unknown = await savedCall(emulator, "POST", "/schedule", {
			name: "x",
			config_id: "cfg_nope",
			interval_minutes: 5,
		});
		expect(validationErrors(unknown)).toEqual(["config_id: no saved config cfg_nope on this account"]);
		expect((await savedCall(emulator, "GET", "/schedule")).json.pagination).toMatchObject({ total: 0 });
	});
});
