// The faults component (tools/guests/faults) does not describe itself: the tools of it that the
// playground (`?faults`) and the edge function's tests offer.
export const FAULT_TOOLS = [
  { name: 'ok', summary: 'Does nothing.', parameters: {} },
  { name: 'spin', summary: 'Loops forever (tests the deadline).', parameters: {} },
  { name: 'bomb', summary: 'Allocates until it cannot (tests the memory cap).', parameters: {} },
];
