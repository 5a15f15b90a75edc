import {
	AccountApiNotFoundError,
	DEFAULT_API_URL,
	DEFAULT_SCRAPER_URL,
	likelyServiceAddresses,
	meantServiceAddress,
	ScraperNotFoundError,
	type ServiceApi,
} from "../api/index.js";
import { cliCommand } from "../common/index.js";

/** How long an error waits for the address meant to answer before it is said without it. */
const GUESS_TIMEOUT_MS = 3000;

/** The flags that say which service a command reaches (`addServiceOptions`). */
const SERVICE_FLAGS = ["--api-url", "--scraper-url", "--config"] as const;

/**
 * After an address that is not the service: the address most likely meant, when it answers as the
 * service, with the `health` command that checks it; else where the right one comes from. Never a
 * command that repeats the failure (the same address checked again).
 */
export async function wrongAddressHint(error: unknown, argv: readonly string[], signal: AbortSignal): Promise<string> {
	const wrong = wrongAddress(error);
	if (wrong === undefined) return "";
	const meant = await meantServiceAddress(wrong.api, wrong.url, {
		signal: AbortSignal.any([signal, AbortSignal.timeout(GUESS_TIMEOUT_MS)]),
		timeoutMs: GUESS_TIMEOUT_MS,
	});
	if (meant !== undefined) {
		return `; ${meant} answers as the service: \`${cliCommand(healthWords(argv, wrong.flag, meant))}\` checks it without running a job`;
	}
	const tried = likelyServiceAddresses(wrong.api, wrong.url);
	const unset =
		wrong.api === "scraper API"
			? `the one the account reports (GET /public/scraper), or ${DEFAULT_SCRAPER_URL} with SCRAPEJOB_SCRAPER_KEY`
			: DEFAULT_API_URL;
	return `; ${wrong.url} does not look like the service's ${wrong.api}${tried.length > 0 ? `, nor does ${tried.join(" or ")}` : ""}: left unset, scrapejob uses ${unset}`;
}

function wrongAddress(error: unknown): { api: ServiceApi; flag: string; url: string } | undefined {
	if (error instanceof ScraperNotFoundError) return { api: "scraper API", flag: "--scraper-url", url: error.baseUrl };
	if (error instanceof AccountApiNotFoundError) return { api: "account API", flag: "--api-url", url: error.baseUrl };
	return undefined;
}

/** `health` with the addresses and config file this command line gave, `flag` set to the address meant. */
function healthWords(argv: readonly string[], flag: string, meant: string): string[] {
	const words = ["health"];
	for (let i = 1; i < argv.length; i++) {
		const word = argv[i]!;
		const given = SERVICE_FLAGS.find((name) => word === name || word.startsWith(`${name}=`));
		if (given === undefined) continue;
		const value = word === given ? argv[++i] : word.slice(given.length + 1);
		if (given !== flag && value !== undefined) words.push(given, value);
	}
	words.push(flag, meant);
	return words;
}
