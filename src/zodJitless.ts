import { z } from 'zod';

// Imported first by the CLI, before any module builds or parses a schema (the preset rule book is parsed as it
// loads): zod parses the config and the rule book once per process, so compiling its fast paths (new Function)
// only costs start-up.
z.config({ jitless: true });
