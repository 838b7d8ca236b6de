// The operator's process: controller-runtime's flags (--help lists them), then run until SIGTERM.
import { Manager } from '@statewright/controller'
import { operator } from './operator.ts'

await operator(Manager.fromFlags({ name: '__NAME__' })).start()
