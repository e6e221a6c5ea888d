import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The build is one static directory (dist/) that any CDN can serve; config.json beside
// index.html says where the API is, so one build serves every environment.
export default defineConfig({
  plugins: [react()],
  base: "./",
  build: { target: "es2022", sourcemap: false },
  test: { environment: "happy-dom", include: ["src/**/*.test.{ts,tsx}"] },
});
