import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, test } from "vitest";
import type { Emulator } from "../../src/emulator/index.js";
import { type Answer, call, pollTask, scrapePost, useDemoSite, useEmulator, waitFor } from "./helpers.js";

interface CrawlResult {
	url: string;
	source: string;
	scrape_task_id: string;
	scrape_check_url: string;
}

function crawl(emulator: Emulator, body: Record<string, unknown>, key: string | null = emulator.scraperKey) {
	return call(`${emulator.scraperUrl}/scraper/crawl`, {
		method: "POST",
		headers: { "content-type": "application/json", ...(key === null ? {} : { "x-api-key": key }) },
		body: JSON.stringify(body),
	});
}

/** Every page task of a crawl, polled until it has finished. */
async function finishedTasks(emulator: Emulator, results: CrawlResult[]): Promise<Answer[]> {
	return Promise.all(
		results.map((result) =>
			waitFor(async () => {
				const answer = await pollTask(emulator, result.scrape_task_id);
				return answer.json.status === "processing" ? null : answer;
			}, 10_000),
		),
	);
}

function validationErrors(answer: Answer): string[] {
	return (answer.json.details as { validation_errors: string[] }).validation_errors;
}

describe("POST /scraper/crawl", () => {
	test("finds the domain's pages by links, submits each as a scraper task, charges each page when it is fetched", async () => {
		const site = await useDemoSite({ pages: 5 });
		const emulator = await useEmulator();
		const answer = await crawl(emulator, {
			domain: site.url,
			max_urls: 50,
			depth: 1,
			scraper_config: { mode: "request" },
		});
		expect(answer.status).toBe(200);
		const results = answer.json.results as CrawlResult[];
		const pages = [`${site.url}/`, ...[1, 2, 3, 4, 5].map((n) => `${site.url}/product/${n}`)];
		expect(results.map((result) => result.url)).toEqual(pages);
		expect(answer.json).toMatchObject({
			success: true,
			domain: site.url,
			discovered_count: 6,
			scraper_tasks_submitted: 6,
			credits_used: 0,
		});
		for (const result of results) {
			expect(result.source).toBe("crawl");
			expect(result.scrape_task_id).toMatch(/^task_[0-9a-f]{16}$/);
			expect(result.scrape_check_url).toBe(`/api/v1/scraper/tasks/${result.scrape_task_id}`);
		}
		const tasks = await finishedTasks(emulator, results);
		for (const task of tasks) {
			expect(task.json).toMatchObject({ status: "completed", mode_used: "request", credits_used: 2 });
		}
		expect(tasks[1]?.json.content).toContain("<h1>Product 1</h1>");
		// Request mode, residential: 2 credits a page, all charged to the crawl request.
		expect(emulator.ledger.totalCharged()).toBe(12);
		expect(emulator.credits()).toBe(10_000 - 12);
		expect(emulator.ledger.byEndpoint("crawl")[0]?.creditsCharged).toBe(12);
	});

	test("depth 0 is the start page only; url_pattern filters; max_urls caps", async () => {
		const site = await useDemoSite({ pages: 5 });
		const emulator = await useEmulator();
		const urlsOf = (answer: Answer) => (answer.json.results as CrawlResult[]).map((result) => result.url);
		const home = await crawl(emulator, { domain: site.url, max_urls: 10, depth: 0 });
		expect(urlsOf(home)).toEqual([`${site.url}/`]);
		const products = await crawl(emulator, { domain: site.url, max_urls: 10, url_pattern: "/product/[24]$" });
		expect(urlsOf(products)).toEqual([`${site.url}/product/2`, `${site.url}/product/4`]);
		const capped = await crawl(emulator, { domain: site.url, max_urls: 3 });
		expect(urlsOf(capped)).toEqual([`${site.url}/`, `${site.url}/product/1`, `${site.url}/product/2`]);
		expect(capped.json.discovered_count).toBe(3);
	});

	test("pages share the key's concurrency slots: with one of two taken, they are fetched one at a time", async () => {
		// A site that counts how many of its pages are being fetched at the same moment; `/hold` answers
		// only when the test lets it, so a realtime fetch of it keeps one slot taken meanwhile.
		let inFlight = 0;
		let maxInFlight = 0;
		let releaseHold = () => {};
		const server = createServer((req, res) => {
			if (req.url === "/") {
				const links = Array.from({ length: 8 }, (_, n) => `<a href="/p/${n + 1}">${n + 1}</a>`).join("");
				res.end(`<html><body>${links}</body></html>`);
				return;
			}
			if (req.url === "/hold") {
				releaseHold = () => res.end("<html><body>held</body></html>");
				return;
			}
			inFlight += 1;
			maxInFlight = Math.max(maxInFlight, inFlight);
			setTimeout(() => {
				inFlight -= 1;
				res.end(`<html><body><h1>${req.url}</h1></body></html>`);
			}, 20);
		});
		await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
		try {
			const { port } = server.address() as AddressInfo;
			const site = `http://127.0.0.1:${port}`;
			const emulator = await useEmulator({ scenario: { concurrency: 2 } });
			const held = await scrapePost(emulator, { url: `${site}/hold`, mode: "request", async: true });
			expect(held.status).toBe(202);
			const answer = await crawl(emulator, { domain: site, max_urls: 9, scraper_config: { mode: "request" } });
			const tasks = await finishedTasks(emulator, (answer.json.results as CrawlResult[]).slice(1));
			expect(tasks.map((task) => task.json.status)).toEqual(Array(8).fill("completed"));
			expect(maxInFlight).toBe(1);
			expect(emulator.ledger.maxInFlight(emulator.scraperKey)).toBe(2);
			releaseHold();
			await finishedTasks(emulator, (answer.json.results as CrawlResult[]).slice(0, 1));
			expect(emulator.ledger.byEndpoint("crawl")[0]?.creditsCharged).toBe(18);
		} finally {
			releaseHold();
			server.closeAllConnections();
			await new Promise((resolve) => server.close(resolve));
		}
	});

	test("missing or bad parameters are one 422 listing every problem; nothing is charged", async () => {
		const emulator = await useEmulator();
		const missing = await crawl(emulator, {});
		expect(missing.status).toBe(422);
		expect(missing.json).toMatchObject({ success: false, error: "Invalid request parameters" });
		expect(validationErrors(missing)).toEqual(["domain: field required", "max_urls: field required"]);
		const bad = await crawl(emulator, {
			domain: "example.com",
			max_urls: 0,
			depth: 99,
			url_pattern: "(",
			scraper_config: { mode: "fast", scheme_id: "sch_missing" },
		});
		expect(bad.status).toBe(422);
		expect(validationErrors(bad)).toEqual([
			"max_urls: must be a whole number from 1 to 10000",
			"depth: must be a whole number from 0 to 10",
			"url_pattern: not a valid regular expression",
			"scraper_config.mode: invalid mode value",
			"scraper_config.scheme_id: no saved scheme sch_missing on this account",
		]);
		expect(emulator.ledger.totalCharged()).toBe(0);
	});

	test("402 when not even one page can be paid; 401 without the scraper key", async () => {
		const emulator = await useEmulator({ scenario: { credits: 1 } });
		const poor = await crawl(emulator, { domain: "example.com", max_urls: 5, scraper_config: { mode: "request" } });
		expect(poor.status).toBe(402);
		expect(poor.json).toMatchObject({ success: false, error: "Insufficient credits", credits_remaining: 1 });
		const anonymous = await crawl(emulator, { domain: "example.com", max_urls: 5 }, null);
		expect(anonymous.status).toBe(401);
		const accountKey = await crawl(emulator, { domain: "example.com", max_urls: 5 }, emulator.accountKey);
		expect(accountKey.status).toBe(401);
	});

	test("async: 202 with a crawl task; /scraper/crawl/tasks/<id> answers the crawl once discovered, to its key only", async () => {
		const site = await useDemoSite({ pages: 2 });
		const emulator = await useEmulator({ scenario: { keys: { scraper: ["key-one", "key-two"] } } });
		const submitted = await crawl(emulator, { domain: site.url, max_urls: 10, async: true }, "key-one");
		expect(submitted.status).toBe(202);
		const taskId = submitted.json.task_id as string;
		expect(submitted.json).toMatchObject({
			success: true,
			status: "processing",
			check_url: `/api/v1/scraper/crawl/tasks/${taskId}`,
		});
		const poll = (key: string) =>
			call(`${emulator.scraperUrl}/scraper/crawl/tasks/${taskId}`, { headers: { "x-api-key": key } });
		const done = await waitFor(async () => {
			const answer = await poll("key-one");
			return answer.json.status === "completed" ? answer : null;
		});
		expect(done.status).toBe(200);
		expect(done.json).toMatchObject({ success: true, task_id: taskId, discovered_count: 3 });
		const tasks = await finishedTasks(emulator, done.json.results as CrawlResult[]);
		expect(tasks.map((task) => task.json.status)).toEqual(["completed", "completed", "completed"]);
		expect((await poll("key-two")).status).toBe(404);
	});
});
