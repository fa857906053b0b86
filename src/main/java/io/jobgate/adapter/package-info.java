/**
 * The contract between the gateway and provider adapter routes: the request a route gets, the answer it gives (AdapterResult), calls from outside a route, Retry-After, backoff, multipart forms.
 *
 * <p>May use: common, job, provider.
 */
package io.jobgate.adapter;
