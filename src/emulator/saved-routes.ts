/**
 * The account-side endpoints of the scraper API (`/api/v1/account/…`, docs/service.md, "Saved items"), which
 * authenticate with the scraper key like every `/api/v1` endpoint: configs and their generation
 * tasks, schemes with their status, storage configs, schedules with toggle and runs.
 */

import { answerGenerate, answerGenerateTask } from "./config-generation.js";
import { answerConfigs } from "./config-routes.js";
import type { LedgerEndpoint } from "./ledger.js";
import type { SavedAnswer, SavedRequest } from "./saved-answers.js";
import { answerSchedules } from "./schedule-routes.js";
import { answerSchemes } from "./scheme-routes.js";
import { answerStorage } from "./storage-routes.js";

type Target =
	| "configs"
	| "generate"
	| "generate-task"
	| "schemes"
	| "scheme-status"
	| "storage"
	| "schedule"
	| "schedule-toggle"
	| "schedule-runs";

export interface SavedRoute {
	readonly endpoint: LedgerEndpoint;
	readonly methods: readonly string[];
	readonly target: Target;
	readonly id?: string;
}

const COLLECTION = ["GET", "POST"] as const;
const ITEM = ["GET", "PUT", "DELETE"] as const;

const COLLECTIONS: Readonly<Record<string, { endpoint: LedgerEndpoint; target: Target }>> = {
	configs: { endpoint: "configs", target: "configs" },
	schemes: { endpoint: "schemes", target: "schemes" },
	storage: { endpoint: "storage", target: "storage" },
	schedule: { endpoint: "schedule", target: "schedule" },
};

/** `path` is the part after `/api/v1`; null when it is no account path. */
export function matchSavedRoute(path: string): SavedRoute | null {
	if (!path.startsWith("/account/")) return null;
	const parts = path.slice("/account/".length).split("/").map(decodeURIComponent);
	const [collection, id, sub, subId] = parts;
	const known = collection === undefined ? undefined : COLLECTIONS[collection];
	if (!known || parts.some((part) => part === "")) return null;
	if (collection === "configs" && id === "generate") {
		if (parts.length === 2) return { endpoint: "config-generate", methods: ["POST"], target: "generate" };
		if (parts.length === 4 && sub === "tasks") {
			return { endpoint: "config-generate", methods: ["GET"], target: "generate-task", id: subId as string };
		}
		return null;
	}
	if (parts.length === 1) return { ...known, methods: COLLECTION };
	if (parts.length === 2) return { ...known, methods: ITEM, id };
	if (parts.length !== 3) return null;
	if (collection === "schemes" && sub === "status") {
		return { endpoint: "schemes", methods: ["GET"], target: "scheme-status", id };
	}
	if (collection === "schedule" && sub === "toggle") {
		return { endpoint: "schedule", methods: ["POST"], target: "schedule-toggle", id };
	}
	if (collection === "schedule" && sub === "runs") {
		return { endpoint: "schedule", methods: ["GET"], target: "schedule-runs", id };
	}
	return null;
}

export async function answerSaved(route: SavedRoute, request: SavedRequest): Promise<SavedAnswer> {
	switch (route.target) {
		case "configs":
			return answerConfigs(request);
		case "generate":
			return answerGenerate(request);
		case "generate-task":
			return answerGenerateTask(request);
		case "schemes":
			return answerSchemes(request, false);
		case "scheme-status":
			return answerSchemes(request, true);
		case "storage":
			return answerStorage(request);
		case "schedule":
			return answerSchedules(request, "item");
		case "schedule-toggle":
			return answerSchedules(request, "toggle");
		case "schedule-runs":
			return answerSchedules(request, "runs");
		default: {
			const unreachable: never = route.target;
			throw new Error(`unknown saved route ${String(unreachable)}`);
		}
	}
}
