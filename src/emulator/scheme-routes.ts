/**
 * Saved extraction schemes (docs/service.md, "Extraction on the service", `/account/schemes`): list, create (as given, tested,
 * or tested and fixed; in the background with `async`), read, update, delete, and
 * `/account/schemes/<id>/status`. A realtime request names one with `scheme_id`.
 */
import { isTruthy, timestamp } from "./http-io.js";
import {
	invalid,
	isAnswer,
	notFound,
	ok,
	paginate,
	requireSomeField,
	type SavedAnswer,
	type SavedRequest,
} from "./saved-answers.js";
import { checkSchemeBody } from "./saved-checks.js";
import { newId, type Params, type SavedScheme } from "./saved-items.js";
import { type SchemeTestResult, startSchemeTest } from "./scheme-test.js";

function testResult(result: SchemeTestResult, config: Params): Params {
	return result.passed
		? { passed: true, url: config.url, status_code: result.statusCode, extracted_data: result.extractedData }
		: { passed: false, url: config.url, error: result.message };
}

function apply(scheme: SavedScheme, result: SchemeTestResult, config: Params, nowIso: string): void {
	scheme.test_result = testResult(result, config);
	scheme.updated_at = nowIso;
	if (result.passed) {
		scheme.config = config;
		scheme.generated_scheme = result.generatedScheme;
		scheme.status = "ready";
	} else scheme.status = "failed";
}

function statusBody(scheme: SavedScheme): Params {
	return {
		scheme_id: scheme.id,
		status: scheme.status,
		test_result: scheme.test_result,
		generated_scheme: scheme.generated_scheme,
		updated_at: scheme.updated_at,
	};
}

/**
 * Create (no `existing`) or update. Without `test` the scheme is saved as given; with it, saved only
 * when the test passes (422 otherwise) — or, with `async`, saved as processing and tested after the answer.
 */
async function save(request: SavedRequest, existing: SavedScheme | undefined): Promise<SavedAnswer> {
	const { ctx, body, key, entry } = request;
	const now = () => new Date(ctx.clock()).toISOString();
	const config = (body.config as Params | undefined) ?? existing?.config ?? {};
	const verb = existing ? "updated" : "created";
	const scheme: SavedScheme = existing ?? {
		id: newId("sch_"),
		name: "",
		config,
		status: "ready",
		extract_prompt: null,
		generated_scheme: null,
		test_result: null,
		created_at: now(),
		updated_at: now(),
	};
	const commit = () => {
		if (body.name !== undefined) scheme.name = (body.name as string).trim();
		if (typeof body.extract_prompt === "string") scheme.extract_prompt = body.extract_prompt;
		if (!existing) ctx.saved.schemes.add(scheme);
	};
	if (!isTruthy(body.test)) {
		commit();
		scheme.config = config;
		scheme.status = "ready";
		scheme.updated_at = now();
		return ok(existing ? 200 : 201, { ...scheme, message: `Scheme ${verb} successfully` });
	}
	const started = startSchemeTest(ctx, key, entry, config, isTruthy(body.fix));
	if (started.kind === "refused") return { status: started.status, body: started.body };
	if (isTruthy(body.async)) {
		commit();
		scheme.status = "processing";
		scheme.updated_at = now();
		void started.result.then((result) => apply(scheme, result, config, now()));
		return ok(202, {
			id: scheme.id,
			scheme_id: scheme.id,
			status: "processing",
			message: `Scheme ${verb}; its test runs in the background`,
			check_url: `/api/v1/account/schemes/${scheme.id}/status`,
			timestamp: timestamp(),
		});
	}
	const result = await started.result;
	if (!result.passed) {
		return {
			status: 422,
			body: {
				success: false,
				error: "Scheme test failed",
				message: `${result.message}; the scheme was not ${verb === "created" ? "saved" : "changed"}`,
				test_result: testResult(result, config),
				credits_used: result.creditsUsed,
				timestamp: timestamp(),
			},
			creditsUsed: result.creditsUsed,
			modeUsed: result.modeUsed,
		};
	}
	commit();
	apply(scheme, result, config, now());
	return {
		status: existing ? 200 : 201,
		body: {
			success: true,
			...scheme,
			credits_used: result.creditsUsed,
			message: `Scheme tested and ${verb} successfully`,
		},
		creditsUsed: result.creditsUsed,
		modeUsed: result.modeUsed,
	};
}

export async function answerSchemes(request: SavedRequest, statusOnly: boolean): Promise<SavedAnswer> {
	const { ctx, method, id, body } = request;
	const schemes = ctx.saved.schemes;
	if (id === undefined) {
		if (method === "GET") {
			const page = paginate(schemes.values(), request.query);
			return isAnswer(page) ? page : ok(200, { schemes: page.items, pagination: page.pagination });
		}
		const problems = checkSchemeBody(body, false);
		return problems.length > 0 ? invalid(problems) : save(request, undefined);
	}
	const scheme = schemes.get(id);
	if (!scheme) return notFound("scheme", id);
	if (statusOnly) return ok(200, statusBody(scheme));
	switch (method) {
		case "GET":
			return ok(200, { ...scheme });
		case "PUT": {
			const problems = [
				...requireSomeField(body, ["name", "config", "test", "extract_prompt"]),
				...checkSchemeBody({ ...body, config: body.config ?? scheme.config }, true),
			];
			return problems.length > 0 ? invalid(problems) : save(request, scheme);
		}
		default:
			schemes.delete(scheme.id);
			return ok(200, { id: scheme.id, message: "Scheme deleted successfully" });
	}
}
