import { errorMessage } from "../common/index.js";
import { labelValues, METRIC_SPECS, type RunMetrics } from "./run-metrics.js";

/** How long the push may take at the run's end: the exit waits no longer for a collector. */
export const OTLP_PUSH_TIMEOUT_MS = 10_000;

/**
 * The run's metrics pushed once over OTLP/HTTP (JSON) when it ends: the same names, labels (as
 * attributes) and figures as the Prometheus file. The OpenTelemetry SDK is imported only here, only
 * when a push is asked for. Never throws: returns what went wrong, or null.
 */
export async function pushOtlpMetrics(
	url: string,
	metrics: RunMetrics,
	timeoutMs: number = OTLP_PUSH_TIMEOUT_MS,
): Promise<string | null> {
	try {
		const [{ MeterProvider, MetricReader }, { OTLPMetricExporter }, { resourceFromAttributes }] = await Promise.all([
			import("@opentelemetry/sdk-metrics"),
			import("@opentelemetry/exporter-metrics-otlp-http"),
			import("@opentelemetry/resources"),
		]);
		const exporter = new OTLPMetricExporter({ url, timeoutMillis: timeoutMs });
		// A reader that exports only when told: a periodic reader exported again on shutdown (two pushes a run).
		class OnceReader extends MetricReader {
			protected override async onForceFlush(): Promise<void> {}
			protected override async onShutdown(): Promise<void> {}
		}
		const reader = new OnceReader();
		const provider = new MeterProvider({
			resource: resourceFromAttributes({ "service.name": "scrapejob" }),
			readers: [reader],
		});
		const meter = provider.getMeter("scrapejob");
		for (const spec of METRIC_SPECS) {
			const instrument =
				spec.type === "gauge"
					? meter.createObservableGauge(spec.name, { description: spec.help })
					: meter.createObservableCounter(spec.name, { description: spec.help });
			instrument.addCallback((result) => {
				for (const value of labelValues(spec, metrics)) {
					const attributes: Record<string, string> = { job: metrics.job, shard: metrics.shard };
					if (metrics.worker !== "") attributes.worker = metrics.worker;
					if (spec.label && value !== undefined) attributes[spec.label.name] = value;
					result.observe(spec.read(metrics, value), attributes);
				}
			});
		}
		let timer: NodeJS.Timeout | undefined;
		const deadline = new Promise<never>((_, reject) => {
			timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
		});
		const pushOnce = async () => {
			const { resourceMetrics } = await reader.collect();
			await new Promise<void>((resolve, reject) => {
				exporter.export(resourceMetrics, (result) => {
					if (result.code === 0) resolve();
					else reject(result.error ?? new Error("the collector refused the metrics"));
				});
			});
		};
		try {
			await Promise.race([pushOnce(), deadline]);
		} finally {
			clearTimeout(timer);
			void provider.shutdown().catch(() => undefined);
			void exporter.shutdown().catch(() => undefined);
		}
		return null;
	} catch (error) {
		return `OTLP metrics push failed: ${errorMessage(error)}`;
	}
}
