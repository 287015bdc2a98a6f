"""compare.py A.pt B.pt ULPS: exit 0 if two float32 parameter vectors differ by at most ULPS units in
the last place of the largest parameter's magnitude (0: bitwise equal).

Why that unit: summing the ranks' gradients in another order changes a parameter by rounding errors
of the size of the update, whatever the parameter's own size, so a parameter that ends near zero can
differ by many of its own ulps. The per-element count is printed too, for the reader.
"""

import sys

import torch

a, b, ulps = torch.load(sys.argv[1]), torch.load(sys.argv[2]), int(sys.argv[3])
largest = float(torch.maximum(a.abs().max(), b.abs().max()))
unit = float(torch.finfo(torch.float32).eps) * 2.0 ** torch.tensor(largest).log2().floor().item()
worst = float((a - b).abs().max())
ia, ib = a.view(torch.int32).long(), b.view(torch.int32).long()
per_element = int((ia - ib).abs().max())
print(f"{sys.argv[1]} vs {sys.argv[2]}: {a.numel()} parameters, max |diff| {worst:.3e} = {worst / unit:.2f} ulp "
      f"of the largest parameter ({largest:.3f}); per element at most {per_element} ulp; bitwise equal {torch.equal(a, b)}")
sys.exit(0 if (torch.equal(a, b) if ulps == 0 else worst <= ulps * unit) else 1)
