// @statewright/controller/webhooks: the HTTPS server of admission and conversion webhooks, for a
// program that serves them without a Manager (Manager.webhook() uses the same server).
export { WebhookServer, webhookPath, type AdmissionContext, type WebhookOptions, type WebhookServerOptions } from './server.ts'
export { ConversionWebhook, CONVERT_PATH, type ConversionAnswer } from './conversion.ts'
