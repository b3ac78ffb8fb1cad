/** The JSON form of one prom-client metric, as sent between threads for aggregation. */
import type { MetricObjectWithValues, MetricValue } from './vendor/prom-client.js';

export type MetricObjectJson = MetricObjectWithValues<MetricValue<string>>;
