// ConfirmDialog: the typed-name confirmation of a destructive action.
import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ApiError } from "../api/client";
import { ConfirmDialog } from "./common";

afterEach(cleanup);

function confirm(run: () => Promise<unknown>, onDone = vi.fn()) {
  render(
    <ConfirmDialog
      title="Delete chat-ops?"
      what="subscription"
      name="chat-ops"
      confirm="Yes, delete"
      run={run}
      onDone={onDone}
      onCancel={vi.fn()}
    >
      <span>Its log goes with it.</span>
    </ConfirmDialog>,
  );
  return { box: screen.getByLabelText(/Type the subscription's name/), yes: screen.getByRole("button", { name: "Yes, delete" }), onDone };
}

describe("ConfirmDialog", () => {
  it("waits for the exact name, then runs once and says so", async () => {
    const run = vi.fn().mockResolvedValue(undefined);
    const { box, yes, onDone } = confirm(run);
    expect(yes).toHaveProperty("disabled", true);
    fireEvent.change(box, { target: { value: "chat-op" } });
    fireEvent.keyDown(box, { key: "Enter" });
    expect(run).not.toHaveBeenCalled();
    fireEvent.change(box, { target: { value: " chat-ops " } });
    expect(yes).toHaveProperty("disabled", false);
    await act(async () => {
      fireEvent.keyDown(box, { key: "Enter" });
    });
    expect(run).toHaveBeenCalledTimes(1);
    expect(onDone).toHaveBeenCalledTimes(1);
  });
  it("shows the API's refusal and stays open", async () => {
    const run = vi
      .fn()
      .mockRejectedValue(
        new ApiError(404, { type: "urn:horizon:problem:not-found", title: "Not found", status: 404, detail: "No such subscription." }),
      );
    const { box, yes, onDone } = confirm(run);
    fireEvent.change(box, { target: { value: "chat-ops" } });
    await act(async () => {
      fireEvent.click(yes);
    });
    expect(screen.getByRole("alert").textContent).toContain("No such subscription.");
    expect(onDone).not.toHaveBeenCalled();
  });
});
