-- schedules/lib/models.lua: the model zoo of the seeds, as a module (local models = require "models").
--   models.transformer(size, opts)  the cs336 language model at the sizes of the handouts' Table 1:
--       small 768/3072/12/12, medium 1024/4096/24/16, large 1280/5120/36/20, xl 1600/6400/48/25,
--       "2.7b" 2560/10240/32/32, "10b" 5120/13824/32/40 (d_model/d_ff/layers/heads; 10b does not fit one
--       GPU with DDP: schedules/fsdp_10b.lua); vocab 10000, context 512, rope_theta
--       10000 unless opts says otherwise (opts may set any transformer{} field: context, vocab, layers,
--       attention = "flash" | "naive", ...).
--   models.tiny(opts)               a tiny transformer for CPU checks (d_model 64, d_ff 128, 2 layers,
--                                   4 heads, vocab 256, context 32).
--   models.toy()                    ToyModel of the DDP tests (tests/common.py).
--   models.toy_tied()               ToyModelWithTiedWeights (fc4 shares fc2's weight).
--   models.toy_layernorm(in, out)   the mixed-precision question's ToyModel (fc1, relu, ln, fc2).
--   models.mlp_deep()               a deeper ToyModel for pipelines: fc1 10->32, fc2..fc4 32->32, fc5 32->5
--                                   (with biases), ReLU between: nine layers entries.
-- Every function passes `1` as the constructors' second argument, so an error in what it builds is
-- reported at the line that called it in your schedule.
local models = {}

local sizes = {
  small    = { d_model = 768,  d_ff = 3072,  layers = 12, heads = 12 },
  medium   = { d_model = 1024, d_ff = 4096,  layers = 24, heads = 16 },
  large    = { d_model = 1280, d_ff = 5120,  layers = 36, heads = 20 },
  xl       = { d_model = 1600, d_ff = 6400,  layers = 48, heads = 25 },
  ["2.7b"] = { d_model = 2560, d_ff = 10240, layers = 32, heads = 32 },
  ["10b"]  = { d_model = 5120, d_ff = 13824, layers = 32, heads = 40 },
}
models.sizes = sizes

local function merge(base, opts, up)
  if opts ~= nil and type(opts) ~= "table" then
    error("models: the options must be a table such as { context = 512 }, got " .. tostring(opts), up + 1)
  end
  local t = {}
  for k, v in pairs(base) do t[k] = v end
  for k, v in pairs(opts or {}) do t[k] = v end
  return t
end

function models.transformer(size, opts)
  local s = sizes[size]
  if not s then
    error(string.format('models.transformer: size must be one of "small", "medium", "large", "xl", "2.7b" or '
      .. '"10b", got %s', type(size) == "string" and string.format("%q", size) or tostring(size)), 2)
  end
  local spec = merge({ name = size, d_model = s.d_model, d_ff = s.d_ff, layers = s.layers,
                       heads = s.heads, vocab = 10000, context = 512, rope_theta = 10000 }, opts, 2)
  return transformer(spec, 1)
end

function models.tiny(opts)
  local spec = merge({ name = "tiny", d_model = 64, d_ff = 128, layers = 2, heads = 4, vocab = 256,
                       context = 32, rope_theta = 10000 }, opts, 2)
  return transformer(spec, 1)
end

-- ToyModel: fc1 Linear(10, 10, bias=False), fc2 Linear(10, 50) whose bias is frozen, fc3 Linear(50, 5,
-- bias=False), ReLU between, and the frozen no_grad_fixed_param = [2.0, 2.0].
function models.toy()
  return mlp({
    name = "toy",
    layers = {
      linear({ name = "fc1", in_features = 10, out_features = 10, bias = false }, 1),
      relu({ name = "relu" }, 1),
      linear({ name = "fc2", in_features = 10, out_features = 50, bias_frozen = true }, 1),
      relu({ name = "relu" }, 1),
      linear({ name = "fc3", in_features = 50, out_features = 5, bias = false }, 1),
    },
    params = { param({ name = "no_grad_fixed_param", numel = 2, value = 2.0, frozen = true }, 1) },
  }, 1)
end

-- ToyModelWithTiedWeights: fc1 10->10, fc2 10->50, fc3 50->10, fc4 10->50 (weight tied to fc2's),
-- fc5 50->5, no biases, ReLU between.
function models.toy_tied()
  return mlp({
    name = "toy_tied",
    layers = {
      linear({ name = "fc1", in_features = 10, out_features = 10, bias = false }, 1),
      relu({ name = "relu" }, 1),
      linear({ name = "fc2", in_features = 10, out_features = 50, bias = false }, 1),
      relu({ name = "relu" }, 1),
      linear({ name = "fc3", in_features = 50, out_features = 10, bias = false }, 1),
      relu({ name = "relu" }, 1),
      linear({ name = "fc4", in_features = 10, out_features = 50, bias = false, tie = "fc2" }, 1),
      relu({ name = "relu" }, 1),
      linear({ name = "fc5", in_features = 50, out_features = 5, bias = false }, 1),
    },
  }, 1)
end

-- ToyModel(in_features, out_features) of the mixed-precision question:
-- fc1 Linear(in, 10, bias=False) -> ReLU -> ln LayerNorm(10) -> fc2 Linear(10, out, bias=False).
function models.toy_layernorm(in_features, out_features)
  return mlp({
    name = "toy_layernorm",
    layers = {
      linear({ name = "fc1", in_features = in_features, out_features = 10, bias = false }, 1),
      relu({ name = "relu" }, 1),
      layernorm({ name = "ln", size = 10 }, 1),
      linear({ name = "fc2", in_features = 10, out_features = out_features, bias = false }, 1),
    },
  }, 1)
end

-- A deeper ToyModel (the pipeline checks cut it into stages): fc1 Linear(10, 32), fc2, fc3, fc4
-- Linear(32, 32), fc5 Linear(32, 5), all with biases, ReLU between (9 entries of `layers`).
function models.mlp_deep()
  local layers = {}
  local sizes = { 10, 32, 32, 32, 32, 5 }
  for i = 1, 5 do
    layers[#layers + 1] = linear({ name = "fc" .. i, in_features = sizes[i], out_features = sizes[i + 1] }, 1)
    if i < 5 then layers[#layers + 1] = relu({ name = "relu" }, 1) end
  end
  return mlp({ name = "mlp_deep", layers = layers }, 1)
end

return models
