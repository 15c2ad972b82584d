"""`apply.py verify`: does speculative decoding on this vLLM produce what the model predicts?

A tiny random-weight hybrid model is written locally (Qwen3-Next, or Qwen3.5 dense or MoE:
model.MODEL_CLASSES), vLLM decodes greedily with and without speculation (drafts scripted to hit
every state transition), and every chosen token is judged by teacher forcing through the same
weights in float32 with transformers' PyTorch kernels.
"""
