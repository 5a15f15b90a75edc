import { describe, expect, test } from "vitest";
import { delay, pollTask, scrapeGet, scrapePost, useDemoSite, useEmulator, waitFor } from "./helpers.js";

const TASK_ID = /^task_[0-9a-f]{16}$/;

describe("a fetch longer than timeout_ms becomes a task", () => {
	test("202 with the task record, then processing, then the completed body", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { timeout_ms: 50, credits: 100 } });
		const url = `${site.url}/slow?ms=400`;
		const started = await scrapeGet(emulator, { url, mode: "request" });
		expect(started.status).toBe(202);
		expect(started.json).toMatchObject({ success: true, status: "processing" });
		const taskId = started.json.task_id as string;
		expect(taskId).toMatch(TASK_ID);
		expect(started.json.check_url).toBe(`/api/v1/scraper/tasks/${taskId}`);
		expect(started.json.message).toContain("longer than expected");
		expect(Date.parse(started.json.timestamp as string)).not.toBeNaN();
		expect(started.headers.get("x-credits-used")).toBe("0");

		const processing = await pollTask(emulator, taskId);
		expect(processing.status).toBe(200);
		expect(processing.json).toMatchObject({ success: true, task_id: taskId, status: "processing" });

		const done = await waitFor(async () => {
			const answer = await pollTask(emulator, taskId);
			return answer.json.status === "completed" ? answer : null;
		});
		expect(done.status).toBe(200);
		expect(done.json).toMatchObject({
			success: true,
			task_id: taskId,
			status: "completed",
			url,
			status_code: 200,
			mode_used: "request",
			credits_used: 2,
			credits_remaining: 98,
		});
		expect(done.json.content).toContain("Answered after 400 ms");
		expect(done.headers.get("x-credits-used")).toBe("2");
		expect(done.headers.get("x-mode-used")).toBe("request");
		expect(emulator.credits()).toBe(98);
		const [realtime] = emulator.ledger.byEndpoint("realtime");
		expect(realtime).toMatchObject({ status: 202, taskId, taskStatus: "completed", creditsCharged: 2 });
		expect(emulator.ledger.chargesByUrl().get(url)).toBe(2);
	});

	test("timeout_status 408 answers the same task record with 408", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { timeout_ms: 30, timeout_status: 408 } });
		const answer = await scrapeGet(emulator, { url: `${site.url}/slow?ms=100` });
		expect(answer.status).toBe(408);
		expect(answer.json).toMatchObject({ success: true, status: "processing" });
		expect(answer.json.task_id).toMatch(TASK_ID);
	});

	test("async: true returns the task record at once with 202", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const answer = await scrapePost(emulator, {
			url: `${site.url}/slow?ms=400`,
			async: true,
			content: "markdown",
		});
		expect(answer.status).toBe(202);
		expect(answer.json.message).toContain("submitted");
		const taskId = answer.json.task_id as string;
		// answered before the target did
		expect((await pollTask(emulator, taskId)).json.status).toBe("processing");
		const done = await waitFor(async () => {
			const poll = await pollTask(emulator, taskId);
			return poll.json.status === "completed" ? poll : null;
		});
		expect(done.json.content).toContain("# Slow page");
		expect(done.json.mode_used).toBe("auto (request)");
	});

	test("a failed fetch makes a failed task with 0 credits", async () => {
		const emulator = await useEmulator({ scenario: { faults: [{ kind: "scraping_error", message: "Page crashed" }] } });
		const url = "http://127.0.0.1:9/never-fetched";
		const answer = await scrapePost(emulator, { url, async: true, mode: "browser" });
		const taskId = answer.json.task_id as string;
		const failed = await waitFor(async () => {
			const poll = await pollTask(emulator, taskId);
			return poll.json.status === "failed" ? poll : null;
		});
		expect(failed.json).toMatchObject({
			success: false,
			task_id: taskId,
			status: "failed",
			error: "Scraping error",
			message: "Page crashed",
			url,
			credits_used: 0,
		});
		expect(emulator.ledger.totalCharged()).toBe(0);
	});

	test("a scraping_error fault with credits inside a task: the failed task says what it was charged", async () => {
		const emulator = await useEmulator({
			scenario: { faults: [{ kind: "scraping_error", message: "Page crashed", credits: 3 }] },
		});
		const answer = await scrapePost(emulator, { url: "http://127.0.0.1:9/never-fetched", async: true });
		const failed = await waitFor(async () => {
			const poll = await pollTask(emulator, answer.json.task_id as string);
			return poll.json.status === "failed" ? poll : null;
		});
		expect(failed.json).toMatchObject({ status: "failed", message: "Page crashed", credits_used: 3 });
		expect(failed.headers.get("x-credits-used")).toBe("3");
		expect(emulator.ledger.totalCharged()).toBe(3);
	});

	test("a target non-2xx inside a task fails it with the target's status", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const answer = await scrapePost(emulator, { url: `${site.url}/missing`, async: true });
		const failed = await waitFor(async () => {
			const poll = await pollTask(emulator, answer.json.task_id as string);
			return poll.json.status === "failed" ? poll : null;
		});
		expect(failed.json).toMatchObject({ status: "failed", error: "Target error", status_code: 404, credits_used: 0 });
		expect(failed.headers.get("x-target-status")).toBe("404");
	});

	test("tasks are per key: another key's task is 404", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { keys: { scraper: ["key-one", "key-two"] } } });
		const answer = await scrapePost(emulator, { url: `${site.url}/product/1`, async: true }, "key-one");
		const taskId = answer.json.task_id as string;
		const other = await pollTask(emulator, taskId, "key-two");
		expect(other.status).toBe(404);
		expect(other.json).toMatchObject({ success: false, error: "Task not found" });
		const own = await pollTask(emulator, taskId, "key-one");
		expect(own.status).toBe(200);
	});

	test("finished tasks are kept task_ttl_ms, then 404", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { task_ttl_ms: 60 } });
		const answer = await scrapePost(emulator, { url: `${site.url}/product/1`, async: true });
		const taskId = answer.json.task_id as string;
		await waitFor(async () => (await pollTask(emulator, taskId)).json.status === "completed");
		await delay(80);
		const expired = await pollTask(emulator, taskId);
		expect(expired.status).toBe(404);
	});

	test("a running task holds its slot until its fetch ends", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { concurrency: 1, timeout_ms: 20 } });
		const slow = await scrapeGet(emulator, { url: `${site.url}/slow?ms=400` });
		expect(slow.status).toBe(202);
		const blocked = await scrapeGet(emulator, { url: `${site.url}/product/1` });
		expect(blocked.status).toBe(429);
		expect(blocked.json.error).toBe("Concurrency limit exceeded (1/1)");
		await waitFor(async () => (await pollTask(emulator, slow.json.task_id as string)).json.status === "completed");
		const free = await scrapeGet(emulator, { url: `${site.url}/product/1` });
		expect(free.status).toBe(200);
	});

	test("unknown task ids are 404", async () => {
		const emulator = await useEmulator();
		const answer = await pollTask(emulator, "task_0000000000000000");
		expect(answer.status).toBe(404);
		expect(emulator.ledger.entries[0]).toMatchObject({
			endpoint: "task",
			status: 404,
			taskId: "task_0000000000000000",
		});
	});
});
