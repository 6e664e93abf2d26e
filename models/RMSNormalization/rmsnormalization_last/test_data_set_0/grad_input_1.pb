B
grad_scaleJ ╤l├З║╛У©Vdф6<g	юoтЛ▄╕Ы?©ь6ун╬@