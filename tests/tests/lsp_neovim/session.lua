-- A scripted Neovim session against `loam lsp`, run headless by tests/tests/lsp_neovim.rs with
-- Neovim's built-in LSP client (0.7, Debian 12's package, and later). Each step writes
-- "ok STEP" or "fail STEP: why" to $LOAM_RESULT; the Rust test asserts every step passed.
--
-- Env: LOAM_BIN (the loam binary), LOAM_CATALOGUE (catalogue folder), LOAM_SPEC (the spec to
-- open), LOAM_RESULT (where to write the results).

local out = assert(io.open(os.getenv('LOAM_RESULT'), 'w'))
local function report(step, ok, why)
  out:write((ok and 'ok ' or 'fail ') .. step .. (ok and '' or (': ' .. tostring(why))) .. '\n')
  out:flush()
end

-- Waits up to 10 s (a loaded CI machine) for `done()` while Neovim handles LSP messages.
local function wait(done)
  return vim.wait(10000, done, 20)
end

local function code_of(d)
  return d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
end

local function has_code(bufnr, code)
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if code_of(d) == code then return d end
  end
  return nil
end

local function session()
local spec = os.getenv('LOAM_SPEC')
vim.cmd('edit ' .. vim.fn.fnameescape(spec))
local bufnr = vim.api.nvim_get_current_buf()
local client_id = vim.lsp.start_client({
  name = 'loam',
  cmd = { os.getenv('LOAM_BIN'), '--catalogue', os.getenv('LOAM_CATALOGUE'), 'lsp' },
  root_dir = vim.fn.fnamemodify(spec, ':h'),
})
vim.lsp.buf_attach_client(bufnr, client_id)
local client = vim.lsp.get_client_by_id(client_id)

local function request(method, params)
  local answers = vim.lsp.buf_request_sync(bufnr, method, params, 10000) or {}
  local answer = answers[client_id]
  return answer and answer.result
end

local function position(line, character)
  return { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = { line = line, character = character } }
end

-- 1. Diagnostics arrive: the misspelt `hiden` (line 5, column 4) and the unknown device `H1`
-- (line 21, column 15), whose code the Rust test passes in.
local device_code = os.getenv('LOAM_DEVICE_CODE')
local arrived = wait(function()
  return has_code(bufnr, 'L1002') ~= nil and has_code(bufnr, device_code) ~= nil
end)
local hiden = has_code(bufnr, 'L1002')
local device = has_code(bufnr, device_code)
report('diagnostics', arrived and hiden.lnum == 5 and hiden.col == 4
  and device.lnum == 21 and device.col == 15, vim.inspect(vim.diagnostic.get(bufnr)))

-- 2. Completing the device name: `H1` ends at column 17 of line 21.
local items = request('textDocument/completion', position(21, 17)) or {}
items = items.items or items
local chosen
for _, item in ipairs(items) do
  if item.label == 'H100_SXM' then chosen = item end
end
if chosen then
  vim.lsp.util.apply_text_edits({ chosen.textEdit }, bufnr, client.offset_encoding)
end
local line = vim.api.nvim_buf_get_lines(bufnr, 21, 22, false)[1]
report('completion', chosen ~= nil and line == '    devices = [H100_SXM]', line)
-- The edit reached the server: the unknown device is gone, the misspelt field is still there.
local cleared = wait(function()
  return has_code(bufnr, device_code) == nil and has_code(bufnr, 'L1002') ~= nil
end)
report('diagnostics after edit', cleared, vim.inspect(vim.diagnostic.get(bufnr)))

-- 3. Hover over the device: the catalogue's figures.
local hover = request('textDocument/hover', position(21, 17))
local text = hover and hover.contents and hover.contents.value or ''
report('hover', text:find('79.6 GiB', 1, true) ~= nil, text)

-- 4. Formatting: `tenant="nlp"` (line 1) is written as `loam fmt` writes it.
if vim.lsp.buf.format then
  vim.lsp.buf.format({ timeout_ms = 10000 })
else
  vim.lsp.buf.formatting_sync(nil, 10000)
end
local tenant = vim.api.nvim_buf_get_lines(bufnr, 1, 2, false)[1]
report('formatting', tenant == '  tenant = "nlp"', tenant)

-- 5. Go to definition from the device into the catalogue's YAML (on whichever line the
-- formatter left it).
local device_line = vim.fn.search('H100_SXM', 'w')
local device_column = (vim.fn.getline(device_line):find('H100_SXM', 1, true) or 1) - 1
vim.api.nvim_win_set_cursor(0, { device_line, device_column + 2 })
vim.lsp.buf.definition()
local jumped = wait(function()
  return vim.api.nvim_buf_get_name(0):find('devices/H100_SXM.yaml', 1, true) ~= nil
end)
local at = vim.api.nvim_get_current_line()
report('definition', jumped and at:find('^id: H100_SXM') ~= nil,
  vim.api.nvim_buf_get_name(0) .. ': ' .. at)

vim.lsp.stop_client(client_id)
end

-- A Lua error fails the session as a step instead of leaving Neovim waiting at a prompt.
local ran, err = pcall(session)
if not ran then report('session', false, err) end
out:close()
vim.cmd('qall!')
