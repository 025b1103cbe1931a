/**
 * Custom ids of a card's buttons: `<action>:<alertId>`. A button is a command with its arguments filled in, run
 * through the same path as typed commands (src/interact/interaction.ts, `buttonRequest`). A module of its own, so
 * that the interaction path reads it without loading the cards.
 */
export const BUTTON_ID = /^(ack|muteRun|muteRule):(\d+)$/;
