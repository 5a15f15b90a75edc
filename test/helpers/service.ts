import { onTestFinished } from "vitest";
import {
	type DemoSite,
	type Emulator,
	type ScenarioInput,
	startDemoSite,
	startEmulator,
} from "../../src/emulator/index.js";

export interface TestService {
	emulator: Emulator;
	site: DemoSite;
	/** Environment pointing the CLI at this emulator with its account key. */
	env: NodeJS.ProcessEnv;
	close(): Promise<void>;
}

/** The emulator and a demo site on loopback ports, as a test's service. */
export async function startTestService(scenario: ScenarioInput = {}, siteLatencyMs = 0): Promise<TestService> {
	const site = await startDemoSite({ latencyMs: siteLatencyMs });
	const emulator = await startEmulator({ scenario });
	return {
		emulator,
		site,
		env: { SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey, SCRAPEJOB_API_URL: emulator.apiUrl },
		close: async () => {
			await emulator.close();
			await site.close();
		},
	};
}

/** `startTestService` for the running test: closed when the test finishes (passed or failed). */
export async function useTestService(scenario: ScenarioInput = {}, siteLatencyMs = 0): Promise<TestService> {
	const service = await startTestService(scenario, siteLatencyMs);
	onTestFinished(() => service.close());
	return service;
}
