/**
 * What an API client reads in a 503 `actor_unavailable` made by the runtime itself (host.ts, the transports): fixed
 * texts, never an error's own message, an actor's kind or id, a host, a subject or a timeout. Those are the
 * service's internals (and a thrown error's text can carry anything); where they help an operator, the runtime logs
 * them. The code stays `actor_unavailable`, which callers retry.
 */

/** The runtime could not run the request now (an activation that failed, an actor that moved, ...). */
export const UNAVAILABLE_TEXT = "The service could not handle this request right now; retry shortly.";

/** Nobody answered the request before its time was up (a host move, an overloaded or stuck host). */
export const NO_ANSWER_TEXT = "The service did not answer in time; retry shortly.";
