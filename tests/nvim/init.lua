-- Headless Neovim (0.7+, its built-in LSP client) runs the README's Neovim snippet ($PDLINT_SNIPPET, with
-- `pdlint` on PATH), opens an inventory file, then edits another file of the inventory without saving, and writes
-- what it shows to $PDLINT_OUT as JSON (tests/test_lsp_nvim.py).
local decode, prefill, out = os.getenv("PDLINT_DECODE"), os.getenv("PDLINT_PREFILL"), os.getenv("PDLINT_OUT")
local result = {}
vim.cmd("filetype on")
dofile(os.getenv("PDLINT_SNIPPET"))

local function shown(path)
  local list = {}
  for _, d in ipairs(vim.diagnostic.get(vim.fn.bufnr(path))) do
    table.insert(list, { code = d.code, lnum = d.lnum, col = d.col, severity = d.severity, message = d.message })
  end
  return list
end

local function has(path, code)
  for _, d in ipairs(shown(path)) do
    if d.code == code then return true end
  end
  return false
end

vim.cmd("edit " .. decode)
result.opened = vim.wait(60000, function() return has(decode, "tp-ratio[moriio]") end, 50)
result.clients = vim.tbl_count(vim.lsp.buf_get_clients(0))
result.decode_before = shown(decode)

vim.cmd("edit " .. prefill)
result.servers = vim.tbl_count(vim.lsp.get_active_clients())
for n, line in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do
  if line:match("^vllm_tensor_parallel_size:") then
    vim.api.nvim_buf_set_lines(0, n - 1, n, false, { "vllm_tensor_parallel_size: 2" })
  end
end
result.edited = vim.wait(60000, function() return not has(decode, "tp-ratio[moriio]") end, 50)
result.decode_after = shown(decode)
result.modified = vim.bo.modified

local fh = io.open(out, "w")
fh:write(vim.fn.json_encode(result))
fh:close()
vim.lsp.stop_client(vim.lsp.get_active_clients())
vim.cmd("qa!")
