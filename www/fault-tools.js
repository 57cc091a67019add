// The faults component (tools/guests/faults) does not describe itself: the tools of it that the
// playground (`?faults`) and the edge function's tests offer.
export const FAULT_TOOLS = [
  { name: 'ok', summary: 'Does nothing.', parameters: {} },
  { name: 'exit', summary: 'Exits (tests that a host process survives it).', parameters: {} },
  { name: 'sleep', summary: 'Sleeps a day (tests the deadline while the clock waits).', parameters: {} },
  { name: 'stdin', summary: 'Reads a line of stdin (tests that nothing blocks).', parameters: {} },
  { name: 'spin', summary: 'Loops forever (tests the deadline).', parameters: {} },
  { name: 'bomb', summary: 'Allocates until it cannot (tests the memory cap).', parameters: {} },
];
